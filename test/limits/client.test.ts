import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PacedClient, RetryLaterError, serverWaitMs } from '../../src/mcp/remote/paced-client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 3, rateWindowMs: 2_000 });
});
afterAll(() => s.stop());

describe('paced client against a real rate-limited berth', () => {
  it('a GET that hits 429 waits Retry-After and then succeeds', async () => {
    const t = await s.token({ permissions: ['read'] });
    const waits: number[] = [];
    const c = new PacedClient({ baseUrl: s.url, headers: { authorization: `Bearer ${t.token}` }, concurrency: 1, onWait: (ms) => waits.push(ms) });
    const codes = [];
    for (let i = 0; i < 5; i++) codes.push((await c.request('GET', '/api/v1/teams/current')).status);
    expect(codes).toEqual([200, 200, 200, 200, 200]);
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...waits)).toBeGreaterThanOrEqual(1000);
    await c.close();
  });

  it('never retries a POST: a 429 comes back as RetryLaterError and the server saw it once', async () => {
    const t = await s.token({ permissions: ['read'] });
    const c = new PacedClient({ baseUrl: s.url, headers: { authorization: `Bearer ${t.token}` } });
    for (let i = 0; i < 3; i++) await c.request('GET', '/api/v1/teams/current');
    const err = await c.request('POST', '/api/v1/disable').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryLaterError);
    expect((err as RetryLaterError).seconds).toBeGreaterThanOrEqual(1);
    expect((err as RetryLaterError).response?.status).toBe(429);
    await c.close();
  });
});

describe('paced client retry rules (against a scripted HTTP peer)', () => {
  let server: http.Server;
  let base: string;
  const seen: Array<{ id: string; method: string; start: number; end: number }> = [];
  const inflight = new Map<string, number>();
  let overlapped = false;
  let failuresLeft = new Map<string, number>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const id = String(req.headers['x-request-id']);
      const n = (inflight.get(id) ?? 0) + 1;
      inflight.set(id, n);
      if (n > 1) overlapped = true;
      const start = Date.now();
      setTimeout(() => {
        inflight.set(id, (inflight.get(id) ?? 1) - 1);
        seen.push({ id, method: req.method!, start, end: Date.now() });
        const left = failuresLeft.get(id) ?? 0;
        if (left > 0) {
          failuresLeft.set(id, left - 1);
          res.writeHead(429, { 'retry-after': '0' }).end('{"message":"Too many requests."}');
        } else {
          res.writeHead(200).end('{}');
        }
      }, 20);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('backs off with full jitter: each wait is drawn from [0, base·2^attempt], and retries never overlap', async () => {
    failuresLeft = new Map([['r1', 3]]);
    const waits: number[] = [];
    const draws = [0.5, 0.25, 1];
    let i = 0;
    const c = new PacedClient({ baseUrl: base, baseDelayMs: 40, concurrency: 8, random: () => draws[i++ % 3]!, onWait: (ms) => waits.push(ms) });
    const r = await c.request('GET', '/x', undefined, { 'x-request-id': 'r1' });
    expect(r.status).toBe(200);
    expect(waits).toEqual([Math.floor(0.5 * 40), Math.floor(0.25 * 80), Math.floor(1 * 160)]);
    const attempts = seen.filter((x) => x.id === 'r1');
    expect(attempts.length).toBe(4);
    for (let k = 1; k < attempts.length; k++) expect(attempts[k]!.start).toBeGreaterThanOrEqual(attempts[k - 1]!.end);
    expect(overlapped).toBe(false);
    await c.close();
  });

  it('gives up with "retry after N s" past maxRetries or maxWait', async () => {
    failuresLeft = new Map([['r2', 100]]);
    const c = new PacedClient({ baseUrl: base, baseDelayMs: 1, maxRetries: 2 });
    await expect(c.request('GET', '/x', undefined, { 'x-request-id': 'r2' })).rejects.toBeInstanceOf(RetryLaterError);
    expect(seen.filter((x) => x.id === 'r2').length).toBe(3);
    await c.close();
  });

  it('reads the server’s hint from Retry-After (seconds or date) or X-RateLimit-Reset', () => {
    const now = 1_000_000_000_000;
    expect(serverWaitMs({ 'retry-after': '7' }, now)).toBe(7000);
    expect(serverWaitMs({ 'retry-after': new Date(now + 5000).toUTCString() }, now)).toBe(5000);
    expect(serverWaitMs({ 'x-ratelimit-reset': String(now / 1000 + 3) }, now)).toBe(3000);
    expect(serverWaitMs({}, now)).toBeUndefined();
  });
});
