/**
 * The SSH connection's own decisions, before and around sshd: names resolved by berth and each
 * address checked by the guard before any connection (so a name that resolves to a metadata
 * address later is refused at connect time), resolution failures in words, and the channel bound.
 * DNS cannot run here, so a resolver function stands in for it; everything else is real sockets.
 */
import { generateKeyPairSync } from 'node:crypto';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { hostRefusal, TEAM_REFUSAL } from '../../src/core/network-guard.js';
import { SshConnection, SshError } from '../../src/ssh/connection.js';
import { inspectPrivateKey } from '../../src/ssh/key-material.js';

const key = await inspectPrivateKey(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
const KEY = { privateKey: key.forSsh2, keyFingerprint: key.fingerprint, hostKey: null, username: 'root', readyTimeoutMs: 1_000 };
const servers: net.Server[] = [];
afterAll(() => servers.forEach((s) => s.close()));

/** A TCP listener on loopback that records who connects (and never speaks SSH). */
async function listener(): Promise<{ port: number; connections: () => number }> {
  let n = 0;
  const s = net.createServer((c) => {
    n++;
    c.destroy();
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return { port: (s.address() as net.AddressInfo).port, connections: () => n };
}

const failure = async (c: SshConnection): Promise<SshError> => {
  try {
    await c.ready();
  } catch (err) {
    expect(err).toBeInstanceOf(SshError);
    return err as SshError;
  } finally {
    c.close();
  }
  throw new Error('expected a failure');
};

describe('SSH connections: resolution and the address guard', () => {
  it('a name that does not resolve: said so, with the resolver’s code', async () => {
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND vps.example.invalid'), { code: 'ENOTFOUND' });
    const err = await failure(new SshConnection({ ...KEY, host: 'vps.example.invalid', port: 22, resolve: async () => Promise.reject(notFound) }));
    expect(err.kind).toBe('resolve');
    expect(err.message).toBe("The host name vps.example.invalid could not be resolved (ENOTFOUND): check the spelling, or give the server's IP address.");
  });

  it('a name that resolves to a metadata or link-local address is refused before any connection (DNS rebinding)', async () => {
    const l = await listener();
    for (const address of ['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254']) {
      const err = await failure(new SshConnection({ ...KEY, host: 'innocent.example', port: l.port, resolve: async () => [address], refuseAddress: (a) => hostRefusal(a, true) }));
      expect(err.kind).toBe('address-refused');
      expect(err.permanent).toBe(true);
      expect(err.message).toMatch(/^innocent\.example resolves to an address berth does not connect to: /);
    }
    expect(l.connections()).toBe(0);
  });

  it('a name with any refused address is refused whole; otherwise the first address is used', async () => {
    const l = await listener();
    const refused = await failure(
      new SshConnection({ ...KEY, host: 'mixed.example', port: l.port, resolve: async () => ['127.0.0.1', '169.254.169.254'], refuseAddress: (a) => hostRefusal(a, true) }),
    );
    expect(refused.kind).toBe('address-refused');
    expect(l.connections()).toBe(0);
    const err = await failure(new SshConnection({ ...KEY, host: 'mixed.example', port: l.port, resolve: async () => ['127.0.0.1', '10.255.255.1'], refuseAddress: (a) => hostRefusal(a, true) }));
    expect(err.kind).not.toBe('address-refused');
    expect(l.connections()).toBe(1);
  });

  it('for a team other than the root team, a name resolving to the berth host is refused with the one answer, whatever the port', async () => {
    const a = await listener();
    const answers = new Set<string>();
    for (const port of [a.port, 1, 22]) {
      const err = await failure(new SshConnection({ ...KEY, host: 'innocent.example', port, resolve: async () => ['127.0.0.1'], refuseAddress: (x) => hostRefusal(x, false) }));
      expect(err.kind).toBe('address-refused');
      answers.add(err.message);
    }
    expect([...answers]).toEqual([`innocent.example resolves to an address berth does not connect to: ${TEAM_REFUSAL}`]);
    expect(a.connections()).toBe(0);
  });

  it('the name is resolved once: an answer that changes afterwards (DNS rebinding) is never connected to', async () => {
    const first = await listener();
    let lookups = 0;
    // First the allowed address, then (too late) the metadata service.
    const resolve = async () => (lookups++ === 0 ? ['127.0.0.1'] : ['169.254.169.254']);
    const err = await failure(new SshConnection({ ...KEY, host: 'rebind.example', port: first.port, resolve, refuseAddress: (x) => hostRefusal(x, true) }));
    expect(err.kind).not.toBe('address-refused');
    expect(lookups).toBe(1);
    expect(first.connections()).toBe(1);
  });

  it('a key ssh2 cannot use fails the connection with a reason instead of throwing', async () => {
    const err = await failure(new SshConnection({ ...KEY, privateKey: 'not a key', host: '127.0.0.1', port: 1 }));
    expect(err).toMatchObject({ kind: 'auth', permanent: true });
    expect(err.message).toMatch(/^The private key could not be used: /);
  });

  it('a closed connection refuses new channels with a clear error', async () => {
    const c = new SshConnection({ ...KEY, host: '127.0.0.1', port: 1 });
    c.close();
    await expect(c.openSocket('/var/run/docker.sock')).rejects.toMatchObject({ kind: 'closed' });
  });
});
