/**
 * berth:// resources (issue 38 item 3) with real SDK clients: templates, the paginated list,
 * reads under the token's permissions (logs only with read:sensitive), another team's and
 * unknown URIs answered alike (-32602 with data.uri), and a change made through REST reaching a
 * subscriber: 2026 subscriptions/listen over HTTP and stdio, 2025 resources/subscribe over
 * stdio (and over HTTP sessions: http-sessions.test.ts). A subscriber that leaves leaves nothing behind.
 */
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';
import { buildWorld, type World } from '../helpers/world.js';

let s: TestServer;
let w: World;
let other: { id: number; rootToken: string };
let otherApp: string;

beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0 } as never);
  w = await buildWorld(s);
  other = await s.team('Other');
  otherApp = (await buildWorld(s, other.rootToken, 'o')).appUuid;
}, 120_000);
afterAll(() => s.stop());

const mcpUrl = () => new URL('/mcp', s.url);
const headers = (token: string) => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });

async function modernHttp(token: string): Promise<Client> {
  const c = new Client({ name: 't', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  await c.connect(new StreamableHTTPClientTransport(mcpUrl(), headers(token)));
  return c;
}
async function legacyHttp(token: string): Promise<V1Client> {
  const c = new V1Client({ name: 't', version: '1' });
  await c.connect(new V1HttpTransport(mcpUrl(), headers(token)));
  return c;
}
const stdioParams = (token: string) => ({
  command: process.execPath,
  args: [CLI, 'mcp', '--data', s.dataDir],
  env: { BERTH_TOKEN: token, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir) },
  stderr: 'pipe' as const,
});

const rename = async (name: string) => {
  const r = await call(s.url, 'PATCH', `/api/v1/applications/${w.appUuid}`, { token: s.rootToken, body: { name } });
  expect(r.status).toBe(200);
};

/** Resolves with the first notification the predicate takes, or rejects after ms. */
function waitFor<T>(register: (resolve: (v: T) => void) => void, ms = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no notification within ${ms} ms`)), ms);
    register((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}

type Reader = { readResource(p: { uri: string }): Promise<{ contents: Array<{ uri: string; text?: string }> }> };
const doc = async (c: Reader, uri: string) => JSON.parse((await c.readResource({ uri })).contents[0]!.text!) as Record<string, unknown>;
const errorOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return err as { code: number; message: string; data?: { uri?: string } };
  }
  throw new Error('expected an error');
};

describe('berth:// resources: list, templates, read', () => {
  it.each(['modern', 'legacy'] as const)('over HTTP (%s era): templates, a paginated list of the team, status documents', async (era) => {
    const c = era === 'modern' ? await modernHttp(s.rootToken) : await legacyHttp(s.rootToken);
    const { resourceTemplates } = await c.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual(['applications', 'databases', 'deployments', 'migrations', 'servers', 'services'].map((k) => `berth://${k}/{uuid}`));
    const { resources } = await c.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toEqual(expect.arrayContaining([`berth://applications/${w.appUuid}`, `berth://databases/${w.databaseUuid}`, `berth://services/${w.serviceUuid}`, `berth://servers/${w.serverUuid}`]));
    expect(uris).not.toContain(`berth://applications/${otherApp}`);
    const app = await doc(c, `berth://applications/${w.appUuid}`);
    expect(app).toMatchObject({ kind: 'application', uuid: w.appUuid, server_uuid: w.serverUuid, restart_count: 0 });
    expect(app).toHaveProperty('status');
    expect(app).toHaveProperty('observed_at');
    expect(app).toHaveProperty('last_exit_code');
    expect(app).toHaveProperty('last_deployment');
    expect(await doc(c, `berth://migrations/${w.migrationUuid}`)).toHaveProperty('status');
    // Both eras can be pushed to over HTTP: 2026 on its listen stream, 2025 on its session's GET stream (http-sessions.test.ts).
    const caps = era === 'modern' ? (c as Client).getServerCapabilities() : (c as V1Client).getServerCapabilities();
    expect(caps?.resources?.subscribe).toBe(true);
    await c.close();
  });

  it('another team\'s uuid and a missing one answer the same "not found" (-32602 with data.uri); a malformed URI is invalid params', async () => {
    const c = await modernHttp(s.rootToken);
    const foreign = await errorOf(c.readResource({ uri: `berth://applications/${otherApp}` }));
    const missing = await errorOf(c.readResource({ uri: 'berth://applications/doesnotexist1' }));
    expect(foreign.code).toBe(-32602);
    expect(foreign.data?.uri).toBe(`berth://applications/${otherApp}`);
    expect(missing.code).toBe(-32602);
    expect(foreign.message.replace(otherApp, 'X')).toBe(missing.message.replace('doesnotexist1', 'X'));
    // An application's uuid read as a database is not found either.
    expect((await errorOf(c.readResource({ uri: `berth://databases/${w.appUuid}` }))).code).toBe(-32602);
    for (const uri of ['not a uri', `berth://applications/${w.appUuid}?x=1`, 'berth://applications/a/b']) {
      const bad = await errorOf(c.readResource({ uri }));
      expect(bad.code).toBe(-32602);
      expect(bad.message).toMatch(/Invalid resource URI/);
    }
    await c.close();
  });

  it("a deployment's log only with read:sensitive, as get_deployment", async () => {
    const reader = await s.token({ permissions: ['read'] });
    const sensitive = await s.token({ permissions: ['read', 'read:sensitive'] });
    const plain = await doc(await modernHttp(reader.token), `berth://deployments/${w.deploymentUuid}`);
    const full = await doc(await modernHttp(sensitive.token), `berth://deployments/${w.deploymentUuid}`);
    expect(plain).toHaveProperty('status');
    expect(plain).not.toHaveProperty('logs');
    expect(full).toHaveProperty('logs');
  });

  it('resources/list pages with a cursor; a forged cursor is invalid params', async () => {
    const c = await legacyHttp(s.rootToken);
    const first = await c.listResources();
    expect(first.nextCursor).toBeUndefined(); // one page: fewer than 100 things
    const err = await errorOf(c.listResources({ cursor: 'bm90LWEtY3Vyc29y' }));
    expect(err.code).toBe(-32602);
    await c.close();
  });
});

describe('subscriptions', () => {
  it('2026 subscriptions/listen over HTTP: a rename through REST reaches the stream; list_changed when an app is created', async () => {
    const c = await modernHttp(s.rootToken);
    const uri = `berth://applications/${w.appUuid}`;
    const updated = waitFor<string>((resolve) => c.setNotificationHandler('notifications/resources/updated', (n) => resolve(n.params.uri)));
    const listed = waitFor<true>((resolve) => c.setNotificationHandler('notifications/resources/list_changed', () => resolve(true)));
    const sub = await c.listen({ resourceSubscriptions: [uri], resourcesListChanged: true });
    expect(sub.honoredFilter.resourceSubscriptions).toEqual([uri]);
    await rename('renamed-over-http');
    expect(await updated).toBe(uri);
    const r = await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'another' } });
    expect(r.status).toBe(201);
    expect(await listed).toBe(true);
    await sub.close();
    await c.close();
  });

  it("2026 listen naming another team's URI is refused as not found, before any stream opens", async () => {
    const c = await modernHttp(s.rootToken);
    const err = await errorOf(c.listen({ resourceSubscriptions: [`berth://applications/${otherApp}`] }));
    expect(err.code).toBe(-32602);
    expect(err.data?.uri).toBe(`berth://applications/${otherApp}`);
    await c.close();
  });

  it('another team hears nothing of this team: its listen stream gets neither updates nor list_changed', async () => {
    const c = await modernHttp(other.rootToken);
    let heard = 0;
    c.setNotificationHandler('notifications/resources/list_changed', () => void heard++);
    c.setNotificationHandler('notifications/resources/updated', () => void heard++);
    const sub = await c.listen({ resourceSubscriptions: [`berth://applications/${otherApp}`], resourcesListChanged: true });
    await rename('renamed-again');
    await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'yet another' } });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(heard).toBe(0);
    await sub.close();
    await c.close();
  });

  it('2025 resources/subscribe over stdio (SDK v1): a REST rename reaches the subscriber', async () => {
    const c = new V1Client({ name: 't', version: '1' });
    await c.connect(new V1StdioTransport(stdioParams(s.rootToken)));
    const uri = `berth://applications/${w.appUuid}`;
    const foreign = await errorOf(c.subscribeResource({ uri: `berth://applications/${otherApp}` }));
    expect(foreign.code).toBe(-32602);
    await c.subscribeResource({ uri });
    // stdio's process hears REST's changes when it shares the feed: PostgreSQL or Redis; SQLite is one process each.
    if (process.env.BERTH_TEST_STORE === 'postgres') {
      const updated = waitFor<string>((resolve) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
      await rename('renamed-for-stdio');
      expect(await updated).toBe(uri);
    }
    // A change made in the stdio process itself always reaches it.
    const done = waitFor<string>((resolve) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
    await c.callTool({ name: 'update_application', arguments: { uuid: w.appUuid, name: 'renamed-in-stdio' } });
    expect(await done).toBe(uri);
    await c.close();
  }, 60_000);

  it('2026 subscriptions/listen over stdio (SDK v2): a change reaches the stream; a foreign URI is not found', async () => {
    const c = new Client({ name: 't', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await c.connect(new StdioClientTransport(stdioParams(s.rootToken)));
    const uri = `berth://applications/${w.appUuid}`;
    const err = await errorOf(c.listen({ resourceSubscriptions: [`berth://applications/${otherApp}`] }));
    expect(err.code).toBe(-32602);
    const updated = waitFor<string>((resolve) => c.setNotificationHandler('notifications/resources/updated', (n) => resolve(n.params.uri)));
    const sub = await c.listen({ resourceSubscriptions: [uri] });
    await c.callTool({ name: 'update_application', arguments: { uuid: w.appUuid, name: 'renamed-in-stdio-2026' } });
    expect(await updated).toBe(uri);
    await sub.close();
    await c.close();
  }, 60_000);

  it('1,000 listen/disconnect cycles over HTTP leave no listener behind', async () => {
    const c = await modernHttp(s.rootToken);
    const uri = `berth://applications/${w.appUuid}`;
    const before = s.changes.listenerCount;
    // In batches of 4: a token holds at most 16 streams, and a closed one ends on the server a moment later.
    for (let i = 0; i < 1_000; i += 4) {
      const subs = await Promise.all(Array.from({ length: 4 }, () => c.listen({ resourceSubscriptions: [uri] })));
      await Promise.all(subs.map((x) => x.close()));
    }
    await c.close();
    // The server sees each stream's end when its socket closes, a moment later on a busy machine:
    // wait for the count to come back (a leak never does and fails at the deadline).
    const deadline = Date.now() + 15_000;
    while (s.changes.listenerCount !== before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(s.changes.listenerCount).toBe(before);
  }, 120_000);
});
