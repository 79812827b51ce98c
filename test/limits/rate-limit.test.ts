import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { httpClient } from '../helpers/mcp.js';

const WINDOW_MS = 3_000;
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 20, rateWindowMs: WINDOW_MS });
});
afterAll(() => s.stop());

const current = (token?: string, from?: string) => call(s.url, 'GET', '/api/v1/teams/current', { token, from });

describe('general API limit', () => {
  it('puts X-RateLimit-Limit and X-RateLimit-Remaining on API responses, counting down', async () => {
    const t = await s.token({ permissions: ['read'] });
    const a = await current(t.token);
    const b = await current(t.token);
    expect(a.headers['x-ratelimit-limit']).toBe('20');
    expect(Number(a.headers['x-ratelimit-remaining'])).toBe(19);
    expect(Number(b.headers['x-ratelimit-remaining'])).toBe(18);
    // Errors carry them too: a 404 for a missing team, a 422, a 403.
    for (const r of [
      await call(s.url, 'GET', '/api/v1/teams/424242', { token: t.token }),
      await call(s.url, 'GET', '/api/v1/teams/x', { token: t.token }),
      await call(s.url, 'POST', '/api/v1/disable', { token: t.token }),
    ]) {
      expect(r.headers['x-ratelimit-limit']).toBe('20');
    }
  });

  it('429 with the contract body, Retry-After and X-RateLimit-Reset; after Retry-After the next request passes', async () => {
    const t = await s.token({ permissions: ['read'] });
    let last;
    for (let i = 0; i < 20; i++) last = await current(t.token);
    expect(last!.status).toBe(200);
    expect(last!.headers['x-ratelimit-remaining']).toBe('0');
    const r = await current(t.token);
    expect(r.status).toBe(429);
    expect(r.json).toEqual({ message: 'Too many requests.' });
    const retryAfter = Number(r.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
    const reset = Number(r.headers['x-ratelimit-reset']);
    expect(Math.abs(reset - (Math.floor(Date.now() / 1000) + retryAfter))).toBeLessThanOrEqual(2);
    await new Promise((res) => setTimeout(res, retryAfter * 1000));
    expect((await current(t.token)).status).toBe(200);
  });

  it('two tokens of one user share the user’s bucket', async () => {
    const email = `shared-${Date.now()}@example.test`;
    const a = await s.token({ permissions: ['read'], email });
    const b = await s.token({ permissions: ['read'], email });
    for (let i = 0; i < 10; i++) await current(a.token);
    const r = await current(b.token);
    expect(r.headers['x-ratelimit-remaining']).toBe('9');
  });

  it('requests without a valid token are charged to the source address, not to users', async () => {
    const user = await s.token({ permissions: ['read'] });
    for (let i = 0; i < 20; i++) await current('1|bad', '127.0.0.2');
    const noToken = await current(undefined, '127.0.0.2');
    expect(noToken.status).toBe(429);
    expect((await current(undefined, '127.0.0.3')).status).toBe(401);
    // A valid user calling from the exhausted address has its own bucket.
    expect((await current(user.token, '127.0.0.2')).status).toBe(200);
  });

  it('unknown API routes are charged to the address too', async () => {
    for (let i = 0; i < 20; i++) await call(s.url, 'GET', '/api/v1/nothing-here', { from: '127.0.0.9' });
    expect((await call(s.url, 'GET', '/api/v1/nothing-here', { from: '127.0.0.9' })).status).toBe(429);
  });

  it('/mcp requests are charged and carry the headers; an empty bucket answers 429', async () => {
    const t = await s.token({ permissions: ['read'] });
    const c = await httpClient('v1', s.url, t.token);
    await c.callTool('get_current_team');
    await c.close();
    const r = await current(t.token);
    expect(Number(r.headers['x-ratelimit-remaining'])).toBeLessThan(19);
    for (let i = 0; i < 20; i++) await current(t.token);
    const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    const m = await call(s.url, 'POST', '/mcp', { token: t.token, body: rpc, headers: { accept: 'application/json, text/event-stream' } });
    expect(m.status).toBe(429);
    expect(m.json).toEqual({ message: 'Too many requests.' });
    expect(Number(m.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});

describe('exactness under concurrency', () => {
  it('250 concurrent requests against a limit of 200 admit exactly 200', async () => {
    const big = await startTestServer({ apiRateLimit: 200, rateWindowMs: 60_000 });
    try {
      const t = await big.token({ permissions: ['read'] });
      const agent = new Agent({ connections: 64 });
      const statuses = await Promise.all(
        Array.from({ length: 250 }, async () => {
          const r = await request(`${big.url}/api/v1/teams/current`, { headers: { authorization: `Bearer ${t.token}` }, dispatcher: agent });
          await r.body.dump();
          return r.statusCode;
        }),
      );
      expect(statuses.filter((x) => x === 200).length).toBe(200);
      expect(statuses.filter((x) => x === 429).length).toBe(50);
      await agent.close();
    } finally {
      await big.stop();
    }
  });
});

describe('health and feedback limits', () => {
  it('/api/health has its own 1,000 per minute per address, whatever API_RATE_LIMIT says', async () => {
    const t = await s.token({ permissions: ['read'] });
    for (let i = 0; i < 21; i++) await current(t.token, '127.0.0.4');
    const h = await call(s.url, 'GET', '/api/health', { from: '127.0.0.4' });
    expect(h.status).toBe(200);
    expect(h.headers['x-ratelimit-limit']).toBe('1000');
    const agent = new Agent({ connections: 16, localAddress: '127.0.0.5' });
    const started = Date.now();
    const codes = await Promise.all(
      Array.from({ length: 1050 }, async () => {
        const r = await request(`${s.url}/api/health`, { dispatcher: agent });
        await r.body.dump();
        return r.statusCode;
      }),
    );
    const elapsed = Date.now() - started;
    await agent.close();
    // The bucket holds 1,000 and refills one every 60 ms while the burst is still arriving.
    const ok = codes.filter((c) => c === 200).length;
    expect(ok).toBeGreaterThanOrEqual(1000);
    expect(ok).toBeLessThanOrEqual(1000 + Math.ceil(elapsed / 60));
    expect(codes.filter((c) => c === 429).length).toBe(1050 - ok);
  });

  it('/api/feedback has a small per-address limit of its own', async () => {
    const t = await s.token({ permissions: ['read'] });
    const send = () => call(s.url, 'POST', '/api/feedback', { token: t.token, body: { content: 'rate limited feedback' }, from: '127.0.0.6' });
    const codes = [];
    for (let i = 0; i < 11; i++) codes.push((await send()).status);
    expect(codes.slice(0, 10).every((c) => c === 201)).toBe(true);
    expect(codes[10]).toBe(429);
    // The general bucket of the same user is untouched by feedback.
    expect((await current(t.token, '127.0.0.6')).headers['x-ratelimit-remaining']).toBe('19');
  });
});
