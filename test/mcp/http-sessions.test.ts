/**
 * The 2025-era sessions of /mcp over streamable HTTP (issue 38 item 6): a client of the official
 * SDK v1 with its default settings initializes, gets a session and its GET stream, and hears
 * notifications/resources/updated for what it subscribed to when a change is made through REST.
 * A session belongs to its token, ends on DELETE, when idle, and at the token's cap; what it
 * followed is let go then (the change feed's listener count comes back).
 */
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ResourceUpdatedNotificationSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { MAX_SESSIONS_PER_TOKEN, SESSION_RECHECK_MS } from '../../src/mcp/http-sessions.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { buildWorld, type World } from '../helpers/world.js';

const IDLE_MS = 1_500;
let s: TestServer;
let w: World;
let other: { id: number; rootToken: string };
let otherApp: string;

beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0, mcpSessionIdleMs: IDLE_MS } as never);
  w = await buildWorld(s);
  other = await s.team('Other');
  otherApp = (await buildWorld(s, other.rootToken, 'o')).appUuid;
}, 120_000);
afterAll(() => s.stop());

async function connect(token: string, more: Record<string, string> = {}): Promise<{ c: V1Client; t: V1HttpTransport }> {
  const c = new V1Client({ name: 't', version: '1' });
  const t = new V1HttpTransport(new URL('/mcp', s.url), { requestInit: { headers: { Authorization: `Bearer ${token}`, ...more } } });
  await c.connect(t);
  return { c, t };
}

const rename = async (name: string) => {
  const r = await call(s.url, 'PATCH', `/api/v1/applications/${w.appUuid}`, { token: s.rootToken, body: { name } });
  expect(r.status).toBe(200);
};

function waitFor<T>(register: (resolve: (v: T) => void) => void, ms = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no notification within ${ms} ms`)), ms);
    register((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}

const errorOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return err as { code: number; message: string; data?: { uri?: string } };
  }
  throw new Error('expected an error');
};

/** Waits for the change feed's listener count to come back to n (a leak never does). */
async function listenersBackTo(n: number, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (s.changes.listenerCount !== n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(s.changes.listenerCount).toBe(n);
}

const accept = { accept: 'application/json, text/event-stream' };
const ping = (id: string, token: string) => call(s.url, 'POST', '/mcp', { token, headers: { ...accept, 'mcp-session-id': id }, body: { jsonrpc: '2.0', id: 9, method: 'ping' } });

describe('2025 sessions over streamable HTTP (SDK v1, default settings)', () => {
  it('subscribe: a rename through REST reaches the client as notifications/resources/updated; a foreign URI is not found', async () => {
    const { c, t } = await connect(s.rootToken);
    expect(t.sessionId).toMatch(/^[0-9a-f]{8}\.\d+\.[0-9a-f-]{36}$/);
    expect(c.getServerCapabilities()?.resources?.subscribe).toBe(true);
    const foreign = await errorOf(c.subscribeResource({ uri: `berth://applications/${otherApp}` }));
    expect(foreign.code).toBe(-32602);
    expect(foreign.data?.uri).toBe(`berth://applications/${otherApp}`);
    const uri = `berth://applications/${w.appUuid}`;
    await c.subscribeResource({ uri });
    const updated = waitFor<string>((resolve) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
    await rename('renamed-in-session');
    expect(await updated).toBe(uri);
    // Unsubscribed, a change is no longer sent.
    await c.unsubscribeResource({ uri });
    let heard = 0;
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, () => void heard++);
    await rename('renamed-after-unsubscribe');
    await new Promise((r) => setTimeout(r, 500));
    expect(heard).toBe(0);
    // Tools run in the session too, under the request's caller.
    const team = await c.callTool({ name: 'get_current_team', arguments: {} });
    expect(team.isError).toBeFalsy();
    await t.terminateSession();
    await c.close();
  });

  it('a task of the session: its end is sent as notifications/tasks/status on the GET stream', async () => {
    const { c, t } = await connect(s.rootToken, { 'x-berth-toolsets': 'all' });
    const statuses: Array<{ taskId: string; status: string }> = [];
    c.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params));
    await c.listTools();
    const seen: Array<{ type: string; task?: { taskId: string } }> = [];
    for await (const m of c.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: w.appUuid } }, CallToolResultSchema)) seen.push(m as never);
    expect(seen[0]).toMatchObject({ type: 'taskCreated' });
    expect(seen.at(-1)).toMatchObject({ type: 'result' });
    const taskId = seen[0]!.task!.taskId;
    const deadline = Date.now() + 5_000;
    while (!statuses.some((x) => x.taskId === taskId && x.status !== 'working') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(statuses).toContainEqual(expect.objectContaining({ taskId, status: 'completed' }));
    await t.terminateSession();
    await c.close();
  });

  it("another token naming the session's id gets the SDK's unknown-session 404, on POST, GET and DELETE", async () => {
    const { c, t } = await connect(s.rootToken);
    const id = t.sessionId!;
    const mine = await ping(id, s.rootToken);
    expect(mine.status).toBe(200);
    const theirs = await ping(id, other.rootToken);
    expect(theirs.status).toBe(404);
    expect(theirs.json).toEqual({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
    // Exactly what an id that never existed gets.
    const none = await ping('00000000-0000-4000-8000-000000000000', s.rootToken);
    expect(none.status).toBe(404);
    expect(none.text).toBe(theirs.text);
    for (const m of ['GET', 'DELETE']) {
      const r = await call(s.url, m, '/mcp', { token: other.rootToken, headers: { ...accept, 'mcp-session-id': id } });
      expect(r.status).toBe(404);
      expect(r.text).toBe(theirs.text);
    }
    // Without a token at all: refused before any session is looked at.
    expect((await call(s.url, 'POST', '/mcp', { headers: { ...accept, 'mcp-session-id': id }, body: { jsonrpc: '2.0', id: 1, method: 'ping' } })).status).toBe(401);
    // The session itself was not harmed.
    expect((await ping(id, s.rootToken)).status).toBe(200);
    await t.terminateSession();
    await c.close();
  });

  it('DELETE ends the session: its id is unknown afterwards and its listener is gone', async () => {
    const before = s.changes.listenerCount;
    const { c, t } = await connect(s.rootToken);
    const id = t.sessionId!;
    await c.subscribeResource({ uri: `berth://applications/${w.appUuid}` });
    expect(s.changes.listenerCount).toBe(before + 1);
    await t.terminateSession();
    expect((await ping(id, s.rootToken)).status).toBe(404);
    await c.close();
    await listenersBackTo(before);
  });

  it('a client that leaves without DELETE: its session ends once idle, and its listener with it', async () => {
    const before = s.changes.listenerCount;
    const { c, t } = await connect(s.rootToken);
    const id = t.sessionId!;
    await c.subscribeResource({ uri: `berth://applications/${w.appUuid}` });
    expect(s.changes.listenerCount).toBe(before + 1);
    // close() drops the GET stream but sends no DELETE.
    await c.close();
    await listenersBackTo(before, IDLE_MS * 6);
    expect((await ping(id, s.rootToken)).status).toBe(404);
  });

  it('an open GET stream is no idleness: a session that listens outlives the idle time', async () => {
    const { c, t } = await connect(s.rootToken);
    const uri = `berth://applications/${w.appUuid}`;
    await c.subscribeResource({ uri });
    await new Promise((r) => setTimeout(r, IDLE_MS * 2));
    const updated = waitFor<string>((resolve) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
    await rename('renamed-after-a-while');
    expect(await updated).toBe(uri);
    await t.terminateSession();
    await c.close();
  });

  it(
    'a revoked token: its session ends within SESSION_RECHECK_MS even while its GET stream is open, and its listener is gone',
    async () => {
      const before = s.changes.listenerCount;
      const reader = await s.token({ permissions: ['read'] });
      const { c } = await connect(reader.token);
      await c.subscribeResource({ uri: `berth://applications/${w.appUuid}` });
      expect(s.changes.listenerCount).toBe(before + 1);
      await admin.revokeToken(s.db, reader.id);
      await listenersBackTo(before, SESSION_RECHECK_MS * 3);
      await c.close();
    },
    SESSION_RECHECK_MS * 4,
  );

  it('a token holds at most MAX_SESSIONS_PER_TOKEN sessions: one more ends its least recently used', async () => {
    const reader = await s.token({ permissions: ['read'] });
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
    const ids: string[] = [];
    for (let i = 0; i <= MAX_SESSIONS_PER_TOKEN; i++) {
      const r = await call(s.url, 'POST', '/mcp', { token: reader.token, headers: accept, body: init });
      expect(r.status).toBe(200);
      ids.push(r.headers['mcp-session-id']!);
    }
    expect(new Set(ids).size).toBe(MAX_SESSIONS_PER_TOKEN + 1);
    expect((await ping(ids[0]!, reader.token)).status).toBe(404);
    for (const id of ids.slice(1)) expect((await ping(id, reader.token)).status).toBe(200);
    for (const id of ids.slice(1)) expect((await call(s.url, 'DELETE', '/mcp', { token: reader.token, headers: { 'mcp-session-id': id } })).status).toBe(200);
  });

  it("another instance's session id for the same token is served statelessly (several instances, no sticky balancing); for another token it is unknown", async () => {
    const tokenId = s.rootToken.split('|')[0]!;
    const elsewhere = `0badf00d.${tokenId}.11111111-2222-4333-8444-555555555555`;
    const r = await ping(elsewhere, s.rootToken);
    expect(r.status).toBe(200);
    expect(r.headers['mcp-session-id']).toBeUndefined();
    expect((await call(s.url, 'GET', '/mcp', { token: s.rootToken, headers: { ...accept, 'mcp-session-id': elsewhere } })).status).toBe(405);
    expect((await ping(elsewhere, other.rootToken)).status).toBe(404);
  });

  it('without a session id, GET and DELETE stay 405 and a 2025 request without initialize is served statelessly', async () => {
    for (const m of ['GET', 'DELETE']) {
      const r = await call(s.url, m, '/mcp', { token: s.rootToken });
      expect(r.status).toBe(405);
      expect(r.headers.allow).toBe('POST');
    }
    const r = await call(s.url, 'POST', '/mcp', { token: s.rootToken, headers: accept, body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_current_team', arguments: {} } } });
    expect(r.status).toBe(200);
    expect(r.headers['mcp-session-id']).toBeUndefined();
  });
});
