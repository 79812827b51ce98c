import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

/** A request that must be refused as an outage, and soon. */
async function outage(url: string, method: string, path: string, token?: string, body?: unknown) {
  const t0 = performance.now();
  const r = await call(url, method, path, { token, body });
  const ms = performance.now() - t0;
  expect({ path, status: r.status, retryAfter: r.headers['retry-after'] }).toEqual({ path, status: 503, retryAfter: '5' });
  expect(ms).toBeLessThan(5_000);
  return r;
}

describe.runIf(hasRedis)('a Redis that is connected but frozen (SIGSTOP)', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let s: TestServer;
  beforeAll(async () => {
    redis = await startRedis();
    s = await startTestServer({ apiRateLimit: 10_000 }, { REDIS_URL: redis.url, BERTH_REDIS_TIMEOUT_MS: '1000' });
  });
  afterAll(async () => {
    redis?.signal('SIGCONT');
    await s?.stop();
    redis?.stop();
  });

  it('answers 503 with Retry-After on every route and /api/ready, writes nothing, and recovers when it answers again', async () => {
    const token = s.rootToken;
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token })).status).toBe(200);
    expect((await call(s.url, 'GET', '/api/ready')).text).toBe('READY');

    redis.signal('SIGSTOP');
    await outage(s.url, 'GET', '/api/v1/teams/current', token);
    await outage(s.url, 'GET', '/api/ready');
    await outage(s.url, 'POST', '/api/v1/projects', token, { name: 'during the freeze' });
    await outage(s.url, 'GET', '/api/v1/projects', token);
    await outage(s.url, 'GET', '/api/v1/teams/current');
    expect((await call(s.url, 'GET', '/api/health')).status).toBe(200);
    expect(await s.db.selectFrom('projects').select('id').where('name', '=', 'during the freeze').execute()).toEqual([]);

    redis.signal('SIGCONT');
    await until('READY again', async () => ((await call(s.url, 'GET', '/api/ready')).text === 'READY' ? true : undefined), 15_000);
    expect((await call(s.url, 'POST', '/api/v1/projects', { token, body: { name: 'after the freeze' } })).status).toBe(201);
  }, 60_000);
});
