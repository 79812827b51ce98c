/**
 * The one guarded client for tenant-chosen URLs (webhooks, notification channels, S3): real HTTP
 * listeners on loopback, the guard's resolver standing in for DNS. The name is resolved once and
 * the connection made to that address; redirects are answers, never followed; the berth host's
 * own addresses are refused unless the operator allows them.
 */
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyHost } from '../../src/core/network-guard.js';
import { TargetGuard } from '../../src/core/outbound-guard.js';
import { httpRecorder, type Recorder } from '../helpers/git.js';

let target: Recorder;
let trap: Recorder;
let redirector: Recorder;
beforeAll(async () => {
  target = await httpRecorder();
  trap = await httpRecorder();
  redirector = await httpRecorder((q, r) => (q.resume(), r.writeHead(302, { location: `http://127.0.0.1:${trap.port}/stolen` }).end()));
});
afterAll(() => [target, trap, redirector].forEach((r) => r?.close()));

const post = (guard: TargetGuard, url: string) => guard.fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' }, timeoutMs: 5_000 });

describe('the guarded client', () => {
  it('resolves the name once and connects to that address, whatever the name resolves to afterwards', async () => {
    const lookups: string[] = [];
    const guard = new TargetGuard('127.0.0.1', { resolve: async (h) => (lookups.push(h), lookups.length === 1 ? ['127.0.0.1'] : ['169.254.169.254']) });
    const r = await post(guard, `http://hooks.rebind.test:${target.port}/hook`);
    expect(r).toEqual({ status: 200, text: 'ok' });
    expect(lookups).toEqual(['hooks.rebind.test']);
    expect(target.requests).toContain('POST /hook');
  });

  it('a name with any refused address is refused before connecting', async () => {
    const before = target.requests.length;
    const guard = new TargetGuard('127.0.0.1', { resolve: async () => ['127.0.0.1', '169.254.169.254'] });
    await expect(post(guard, `http://mixed.test:${target.port}/hook`)).rejects.toThrow(/metadata/);
    await expect(post(new TargetGuard('', { resolve: async () => ['127.0.0.1'] }), `http://innocent.test:${target.port}/hook`)).rejects.toThrow(/loopback/);
    expect(target.requests.length).toBe(before);
  });

  it('a redirect is the answer, never followed (to any host)', async () => {
    const guard = new TargetGuard('127.0.0.1', { resolve: async () => ['127.0.0.1'] });
    const r = await post(guard, `http://hooks.test:${redirector.port}/hook`);
    expect(r.status).toBe(302);
    expect(redirector.requests).toEqual(['POST /hook']);
    expect(trap.requests).toEqual([]);
  });

  it('URLs parsers read differently are refused before any lookup or connection', async () => {
    const lookups: string[] = [];
    const guard = new TargetGuard('127.0.0.1', { resolve: async (h) => (lookups.push(h), ['127.0.0.1']) });
    for (const url of [
      `http://public.test\\@127.0.0.1:${trap.port}/x`,
      `http://public.test@127.0.0.1:${trap.port}/x`,
      `http://public.test%40127.0.0.1:${trap.port}/x`,
      `http://127.1:${trap.port}/x`,
      `http://public.test:${trap.port}/\nx`,
    ]) {
      await expect(post(guard, url), url).rejects.toThrow(/refused to connect/);
    }
    expect(lookups).toEqual([]);
    expect(trap.requests).toEqual([]);
  });

  it('the berth host’s own interface addresses are refused unless the operator lists them', () => {
    const own = Object.values(os.networkInterfaces())
      .flatMap((l) => l ?? [])
      .filter((a) => classifyHost(a.address) === 'host');
    for (const a of own) {
      expect(new TargetGuard('').addressRefusal(a.address), a.address).toMatch(/berth host itself/);
      expect(new TargetGuard(a.address).addressRefusal(a.address), a.address).toBeNull();
    }
    expect(new TargetGuard('').addressRefusal('127.0.0.1')).toMatch(/loopback/);
    expect(new TargetGuard('').addressRefusal('93.184.215.14')).toBeNull();
  });
});
