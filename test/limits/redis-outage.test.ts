/**
 * Redis going away under a running berth (its own redis-server, on both stores): requests that
 * need it answer 503 with Retry-After and write nothing, /api/ready says not ready while
 * /api/health stays up, and berth recovers by itself when Redis is back on its port.
 * (How fast the 503s come is measured by bench/outage, not asserted here.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

describe.runIf(hasRedis)('Redis away and back', () => {
  let redis: { url: string; stop: () => void };
  let again: ChildProcess | undefined;
  let s: TestServer;
  beforeAll(async () => {
    redis = await startRedis();
    s = await startTestServer({ apiRateLimit: 10_000 }, { REDIS_URL: redis.url });
  });
  afterAll(async () => {
    await s?.stop();
    redis?.stop();
    again?.kill();
  });

  it('answers 503 with Retry-After while Redis is away, writes nothing, and recovers on its own', async () => {
    const token = s.rootToken;
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token })).status).toBe(200);
    expect((await call(s.url, 'GET', '/api/ready')).text).toBe('READY');

    redis.stop();
    await until('berth to see Redis gone', async () => ((await call(s.url, 'GET', '/api/ready')).status === 503 ? true : undefined), 10_000);
    const down = await call(s.url, 'GET', '/api/v1/teams/current', { token });
    expect(down.status).toBe(503);
    expect(down.json).toEqual({ message: 'The store is unavailable; try again shortly.' });
    expect(down.headers['retry-after']).toBe('5');
    const write = await call(s.url, 'POST', '/api/v1/projects', { token, body: { name: 'during the redis outage' } });
    expect(write.status).toBe(503);
    expect(write.headers['retry-after']).toBe('5');
    const ready = await call(s.url, 'GET', '/api/ready');
    expect(ready.status).toBe(503);
    expect(ready.headers['retry-after']).toBe('5');
    // Liveness asks nothing of Redis.
    expect((await call(s.url, 'GET', '/api/health')).status).toBe(200);
    expect(await s.db.selectFrom('projects').select('id').where('name', '=', 'during the redis outage').execute()).toEqual([]);

    // The same port again: ioredis reconnects by itself.
    again = spawn('redis-server', ['--port', new URL(redis.url).port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await until('berth to reach Redis again', async () => ((await call(s.url, 'GET', '/api/ready')).text === 'READY' ? true : undefined), 15_000);
    const back = await call(s.url, 'POST', '/api/v1/projects', { token, body: { name: 'after the redis outage' } });
    expect(back.status).toBe(201);
  }, 60_000);
});
