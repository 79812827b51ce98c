/**
 * The auth counter's reads (src/store/auth-version.ts) answer a caller only with a read sent after
 * it asked, and share one read among the callers that asked while another was in flight. The
 * read function here is the test's, so the order of sends and answers is the test's to choose.
 */
import { describe, expect, it } from 'vitest';
import { AuthVersion } from '../../src/store/auth-version.js';

function controlledReads() {
  const pending: { resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  const counter = new AuthVersion(() => new Promise<number>((resolve, reject) => void pending.push({ resolve, reject })));
  return { counter, pending };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('auth counter reads', () => {
  it('answer a caller that asked while a read was in flight with the next read, shared', async () => {
    const { counter, pending } = controlledReads();
    const first = counter.current();
    expect(pending).toHaveLength(1);
    // Asked after read 1 was sent: a commit may have come between its send and this call.
    const second = counter.current();
    const third = counter.current();
    let secondValue: number | undefined;
    void second.then((v) => (secondValue = v));
    expect(pending).toHaveLength(1);
    pending[0]!.resolve(1);
    expect(await first).toBe(1);
    await flush();
    expect(secondValue).toBeUndefined();
    expect(pending).toHaveLength(2);
    pending[1]!.resolve(2);
    expect([await second, await third]).toEqual([2, 2]);
    // Nothing in flight: the next caller starts a read of its own.
    const fourth = counter.current();
    expect(pending).toHaveLength(3);
    pending[2]!.resolve(3);
    expect(await fourth).toBe(3);
  });

  it('pass a failed read to its callers only, and read again for the ones waiting', async () => {
    const { counter, pending } = controlledReads();
    const first = counter.current();
    const second = counter.current();
    pending[0]!.reject(new Error('store down'));
    await expect(first).rejects.toThrow('store down');
    await flush();
    expect(pending).toHaveLength(2);
    pending[1]!.resolve(7);
    expect(await second).toBe(7);
  });
});
