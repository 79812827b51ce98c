/**
 * Across instances (issue 38 item 3): two berth instances on one PostgreSQL store, first with
 * PostgreSQL LISTEN/NOTIFY as the change feed, then with Redis pub/sub (REDIS_URL); a rename
 * through REST on one reaches a 2026 listen stream on the other, and a 2025 session's
 * resources/subscribe (SDK v1, the session's GET stream). SQLite is one process: nothing
 * to carry between instances there, so this runs on the PostgreSQL pass.
 */
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';

const stops: Array<() => unknown> = [];
afterAll(async () => {
  for (const stop of stops) await stop();
}, 60_000);

async function pair(env: Record<string, string>): Promise<{ a: TestServer; b: RunningServer }> {
  const a = await startTestServer({ apiRateLimit: 0 } as never, env);
  stops.push(() => a.stop());
  const b = await startServer(loadConfig({ LOG_LEVEL: 'silent', ...env }, { dataDir: a.dataDir, databaseUrl: storeUrlFor(a.dataDir), host: '127.0.0.1', port: 0, apiRateLimit: 0 } as never), () => {});
  stops.unshift(() => b.close());
  return { a, b };
}

async function crossInstance(env: Record<string, string>) {
  const { a, b } = await pair(env);
  const c = new Client({ name: 't', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  await c.connect(new StreamableHTTPClientTransport(new URL('/mcp', b.url), { requestInit: { headers: { Authorization: `Bearer ${a.rootToken}` } } }));
  const server = await call(a.url, 'POST', '/api/v1/servers', { token: a.rootToken, body: { name: 'far', ip: '192.0.2.10' } });
  expect(server.status).toBe(201);
  const serverUri = `berth://servers/${server.json.uuid}`;
  const updated = new Promise<{ uri: string; ms: number }>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('nothing reached the other instance within 5 s')), 5_000);
    c.setNotificationHandler('notifications/resources/updated', (n) => {
      clearTimeout(t);
      resolve({ uri: n.params.uri, ms: performance.now() - sentAt });
    });
  });
  const sub = await c.listen({ resourceSubscriptions: [serverUri] });
  const sentAt = performance.now();
  const r = await call(a.url, 'PATCH', `/api/v1/servers/${server.json.uuid}`, { token: a.rootToken, body: { name: 'renamed' } });
  expect(r.status).toBeLessThan(300);
  const got = await updated;
  expect(got.uri).toBe(serverUri);
  // The bound the issue sets (1 s p95); measured in bench/subscriptions, checked loosely here.
  expect(got.ms).toBeLessThan(3_000);
  await sub.close();
  await c.close();
}

/** A 2025 client (SDK v1, default settings) with a session on b subscribes; a REST change on a reaches it. */
async function crossInstanceSession() {
  const { a, b } = await pair({});
  const c = new V1Client({ name: 't', version: '1' });
  const t = new V1HttpTransport(new URL('/mcp', b.url), { requestInit: { headers: { Authorization: `Bearer ${a.rootToken}` } } });
  await c.connect(t);
  const server = await call(a.url, 'POST', '/api/v1/servers', { token: a.rootToken, body: { name: 'far', ip: '192.0.2.11' } });
  expect(server.status).toBe(201);
  const serverUri = `berth://servers/${server.json.uuid}`;
  await c.subscribeResource({ uri: serverUri });
  const updated = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('nothing reached the session on the other instance within 5 s')), 5_000);
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      clearTimeout(timer);
      resolve(n.params.uri);
    });
  });
  const r = await call(a.url, 'PATCH', `/api/v1/servers/${server.json.uuid}`, { token: a.rootToken, body: { name: 'renamed' } });
  expect(r.status).toBeLessThan(300);
  expect(await updated).toBe(serverUri);
  await t.terminateSession();
  await c.close();
}

describe.runIf(TEST_STORE === 'postgres')('a change through one instance reaches a subscriber on another', () => {
  it('over PostgreSQL LISTEN/NOTIFY', () => crossInstance({}), 60_000);
  it('to a 2025 session (resources/subscribe over HTTP), over PostgreSQL LISTEN/NOTIFY', () => crossInstanceSession(), 60_000);
  it.runIf(hasRedis)(
    'over Redis pub/sub',
    async () => {
      const redis = await startRedis();
      stops.unshift(() => redis.stop());
      await crossInstance({ REDIS_URL: redis.url });
    },
    60_000,
  );
});
