import { describe, expect, it } from 'vitest';
import { BerthError, toWire } from '../../src/errors.js';
import { JobQueues } from '../../src/limits/job-queues.js';

const gate = () => {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { p, open };
};

describe('per-server job queues', () => {
  it('runs at most `concurrency` jobs per server and refuses past the cap with 429 "Deployment queue is full."', async () => {
    const q = new JobQueues({ concurrency: 1, cap: 2, redisUrl: null });
    const g = gate();
    let running = 0;
    let peak = 0;
    const job = async () => {
      running++;
      peak = Math.max(peak, running);
      await g.p;
      running--;
      return 'ok';
    };
    const accepted = [await q.submit('srv-a', job), await q.submit('srv-a', job), await q.submit('srv-a', job)];
    // One running, two waiting: the fourth does not fit.
    const refused = await q.submit('srv-a', job).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BerthError);
    const wire = toWire(refused as BerthError);
    expect(wire.status).toBe(429);
    expect(wire.body).toEqual({ message: 'Deployment queue is full.' });
    expect(Number(wire.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    // Another server's queue is independent.
    const other = await q.submit('srv-b', async () => 'b');
    expect(await other.done).toBe('b');

    g.open();
    expect(await Promise.all(accepted.map((a) => a.done))).toEqual(['ok', 'ok', 'ok']);
    expect(peak).toBe(1);
    // Room again once the queue drained.
    expect(await (await q.submit('srv-a', async () => 'again')).done).toBe('again');
    await q.close();
  });

  it('a failing job rejects its own promise and frees its slot', async () => {
    const q = new JobQueues({ concurrency: 1, cap: 1, redisUrl: null });
    const a = await q.submit('s', async () => {
      throw new Error('boom');
    });
    await expect(a.done).rejects.toThrow('boom');
    expect(await (await q.submit('s', async () => 1)).done).toBe(1);
    await q.close();
  });
});
