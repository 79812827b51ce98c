/**
 * A Redis frozen with SIGSTOP, seen by requests that race the first one to find it (issue 40):
 * each answers 503 with Retry-After within one timeout, not two, and every request after that
 * at once. And one health for every client of that Redis: a timeout on one client fails the calls
 * waiting on another and refuses its next ones. Latency against the timeout: bench/outage (--freeze).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BerthError } from '../../src/errors.js';
import { redisCall, redisClient } from '../../src/limits/redis.js';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

/** Long enough that a request paying it twice cannot pass for one paying it once on a loaded machine. */
const TIMEOUT_MS = 2_000;
const accept = { accept: 'application/json, text/event-stream' };
const mcpList = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

describe.runIf(hasRedis)('requests racing the first one after Redis froze (SIGSTOP)', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let s: TestServer;
  beforeAll(async () => {
    redis = await startRedis();
    s = await startTestServer({ apiRateLimit: 10_000 }, { REDIS_URL: redis.url, BERTH_REDIS_TIMEOUT_MS: String(TIMEOUT_MS) });
  });
  afterAll(async () => {
    redis?.signal('SIGCONT');
    await s?.stop();
    redis?.stop();
  });

  it('answer 503 with Retry-After on every route within one timeout, and the next requests at once', async () => {
    const token = s.rootToken;
    const routes: [string, string, { token?: string; body?: unknown; headers?: Record<string, string> }][] = [
      ['GET', '/api/v1/teams/current', { token }],
      ['GET', '/api/v1/teams/current', {}],
      ['GET', '/api/ready', {}],
      ['POST', '/api/v1/projects', { token, body: { name: 'during the freeze' } }],
      ['GET', '/api/v1/projects', { token }],
      ['GET', '/api/v1/no-such-route', { token }],
      ['POST', '/mcp', { token, body: mcpList, headers: accept }],
    ];
    const answer = async ([method, path, opts]: (typeof routes)[number]) => {
      const t0 = performance.now();
      const r = await call(s.url, method, path, opts);
      return { route: `${method} ${path}`, status: r.status, retryAfter: r.headers['retry-after'], ms: performance.now() - t0 };
    };
    for (const route of routes) expect((await answer(route)).status).not.toBe(503);
    const named = () => s.db.selectFrom('projects').select('id').where('name', '=', 'during the freeze').execute();
    const before = await named();

    redis.signal('SIGSTOP');
    // Every route at once, twice over: the ones behind the first in the client's pipeline used to
    // wait for its timeout and then their own.
    const racing = await Promise.all([...routes, ...routes].map(answer));
    for (const r of racing) {
      expect({ route: r.route, status: r.status, retryAfter: r.retryAfter }).toEqual({ route: r.route, status: 503, retryAfter: '5' });
      expect(r.ms, r.route).toBeLessThan(TIMEOUT_MS * 1.5);
    }
    // Redis is known hung now: the next requests do not wait for it at all.
    for (const route of routes) {
      const r = await answer(route);
      expect({ route: r.route, status: r.status, retryAfter: r.retryAfter }).toEqual({ route: r.route, status: 503, retryAfter: '5' });
      expect(r.ms, r.route).toBeLessThan(TIMEOUT_MS / 2);
    }
    expect((await call(s.url, 'GET', '/api/health')).status).toBe(200);
    expect(await named()).toEqual(before);

    redis.signal('SIGCONT');
    await until('READY again', async () => ((await call(s.url, 'GET', '/api/ready')).text === 'READY' ? true : undefined), 15_000);
    for (const route of routes) expect((await answer(route)).status).not.toBe(503);
  }, 60_000);
});

describe.runIf(hasRedis)('one health for every client of a Redis', () => {
  it('a timeout on one client fails the calls waiting on another, refuses its next ones, and both recover', async () => {
    const redis = await startRedis();
    const a = redisClient(redis.url, TIMEOUT_MS);
    const b = redisClient(redis.url, TIMEOUT_MS);
    try {
      await redisCall(a, () => a.set('k', 'v'));
      expect(await redisCall(b, () => b.get('k'))).toBe('v');

      redis.signal('SIGSTOP');
      const first = redisCall(a, () => a.get('k'));
      await new Promise((r) => setTimeout(r, TIMEOUT_MS / 2));
      // Sent later on its own connection: its own timeout would end half a timeout after a's.
      let waitingSettled = false;
      const waiting = redisCall(b, () => b.get('k')).finally(() => (waitingSettled = true));
      waiting.catch(() => undefined);
      await expect(first).rejects.toBeInstanceOf(BerthError);
      await new Promise((r) => setImmediate(r));
      expect(waitingSettled).toBe(true);
      await expect(waiting).rejects.toMatchObject({ kind: 'store_unavailable' });
      // Refused without asking Redis: the command is never run.
      let ran = false;
      await expect(redisCall(b, async () => ((ran = true), b.get('k')))).rejects.toMatchObject({ kind: 'store_unavailable' });
      expect(ran).toBe(false);

      redis.signal('SIGCONT');
      await until('b answers again', async () => (await redisCall(b, () => b.get('k')).catch(() => undefined)) ?? undefined, 15_000);
      expect(await redisCall(a, () => a.get('k'))).toBe('v');
    } finally {
      redis.signal('SIGCONT');
      a.disconnect();
      b.disconnect();
      redis.stop();
    }
  }, 60_000);
});
