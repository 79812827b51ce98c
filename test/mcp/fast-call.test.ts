// The HTTP fast path for tools/call (src/mcp/fast-call.ts) against the SDK's own answer: two
// real servers on one store, one with the fast path and one without (config.mcpFastCalls), get
// the same requests; every answer must match in status, headers and bytes. Which path answered
// shows in the framing: the fast path sends a Content-Length, the SDK streams chunked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { loadConfig } from '../../src/config/config.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';

let fast: TestServer;
let sdk: RunningServer;
let readToken: string;
beforeAll(async () => {
  fast = await startTestServer();
  const config = loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: fast.dataDir, databaseUrl: storeUrlFor(fast.dataDir), host: '127.0.0.1', port: 0, mcpFastCalls: false });
  sdk = await startServer(config, () => {});
  readToken = (await fast.token({ permissions: ['read'] })).token;
});
afterAll(async () => {
  await sdk?.close();
  await fast?.stop();
});

const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'berth-test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

interface Case {
  era: 'modern' | 'legacy';
  name: string;
  args?: unknown;
  token?: 'root' | 'read';
  headers?: Record<string, string | undefined>;
  meta?: Record<string, unknown>;
  id?: string | number;
  rawBody?: string;
}

function httpRequest(c: Case, token: string) {
  const modern = c.era === 'modern';
  const params = { name: c.name, ...(c.args !== undefined ? { arguments: c.args } : {}), ...(modern || c.meta ? { _meta: { ...(modern ? ENVELOPE : {}), ...c.meta } } : {}) };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    ...(modern ? { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': c.name } : { 'mcp-protocol-version': '2025-11-25' }),
  };
  for (const [k, v] of Object.entries(c.headers ?? {})) {
    if (v === undefined) delete headers[k];
    else headers[k] = v;
  }
  return { headers, body: c.rawBody ?? JSON.stringify({ jsonrpc: '2.0', id: c.id ?? 7, method: 'tools/call', params }) };
}

async function send(server: RunningServer, c: Case) {
  const token = c.token === 'read' ? readToken : fast.rootToken;
  const { headers, body } = httpRequest(c, token);
  const r = await request(`${server.url}/mcp`, { method: 'POST', headers, body });
  const text = await r.body.text();
  const h = { ...r.headers };
  // What differs between two processes or two framings of the same bytes.
  const chunked = h['transfer-encoding'] === 'chunked';
  for (const k of ['date', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'content-length', 'transfer-encoding', 'keep-alive']) delete h[k];
  return { status: r.statusCode, headers: h, text, chunked };
}

/** Both servers' answers; the fast one's framing says which path answered. */
async function both(c: Case) {
  const a = await send(fast, c);
  const b = await send(sdk, c);
  expect(b.chunked).toBe(true);
  expect(a.status).toBe(b.status);
  expect(a.headers).toEqual(b.headers);
  expect(a.text).toBe(b.text);
  return { answer: a, fastPath: !a.chunked };
}

describe.each(['modern', 'legacy'] as const)('tools/call fast path, %s era: the same answer as the SDK', (era) => {
  const cases: Array<[string, Case, boolean]> = [
    ['a result with structured content', { era, name: 'get_current_team', args: {} }, true],
    ['no arguments at all', { era, name: 'get_current_team' }, true],
    ['a string id', { era, name: 'get_current_team', args: {}, id: 'abc-1' }, true],
    ['a validation error (unknown field)', { era, name: 'get_current_team', args: { nope: 1 } }, true],
    ['a validation error (missing field)', { era, name: 'get_application', args: {} }, true],
    ['not found, with its hint', { era, name: 'get_application', args: { uuid: 'no-such-uuid' } }, true],
    ['an array output (wrapped as items)', { era, name: 'list_projects', args: {}, headers: { 'x-berth-toolsets': 'all' } }, true],
    ['a tool the token does not reach (the guard answers the permission)', { era, name: 'create_project', args: { name: 'x' }, token: 'read' }, true],
    ['read-only mode refusing a write tool', { era, name: 'create_project', args: { name: 'x' }, headers: { 'x-berth-read-only': 'true' } }, true],
    ['call_operation (a meta tool, default toolsets)', { era, name: 'call_operation', args: { name: 'get_current_team' } }, true],
    ['call_operation with bad arguments (the meta tool 422)', { era, name: 'call_operation', args: { name: 'Bad Name' } }, true],
    ['describe_operation', { era, name: 'describe_operation', args: { name: 'get_current_team' } }, true],
    ['list_toolsets', { era, name: 'list_toolsets', args: {} }, true],
    ['an unknown tool (the SDK answers)', { era, name: 'no_such_tool', args: {} }, false],
    ['an unlisted tool the token may use (the guard runs it)', { era, name: 'list_servers', args: {}, headers: { 'x-berth-toolsets': 'default' } }, true],
    ['a prototype key in the arguments (the guard answers)', { era, name: 'get_current_team', rawBody: '' }, false],
    ['arguments that are not an object', { era, name: 'get_current_team', args: [1] }, false],
    ['a progress token (may stream: the SDK answers)', { era, name: 'get_current_team', args: {}, meta: { progressToken: 'p1' } }, false],
    ['an Accept header without event streams', { era, name: 'get_current_team', args: {}, headers: { accept: 'application/json' } }, false],
    // (A Content-Type that is not JSON never reaches either path: test/mcp/http.test.ts.)
  ];
  for (const [title, given, expectFast] of cases) {
    it(`${title}${expectFast ? '' : ' (left to the SDK)'}`, async () => {
      // JSON.stringify cannot write a __proto__ key: spliced into the body's text.
      const c = given.rawBody === '' ? { ...given, rawBody: httpRequest({ ...given, rawBody: undefined, args: {} }, '').body.replace('"arguments":{}', '"arguments":{"__proto__":{"x":1}}') } : given;
      const { fastPath } = await both(c);
      expect(fastPath).toBe(expectFast);
    });
  }
});

describe('tools/call fast path: era-specific rungs', () => {
  it('legacy without an MCP-Protocol-Version header is served fast, as the SDK serves it', async () => {
    expect((await both({ era: 'legacy', name: 'get_current_team', args: {}, headers: { 'mcp-protocol-version': undefined } })).fastPath).toBe(true);
  });
  it('legacy with an unsupported version header is the SDK 400', async () => {
    const { answer, fastPath } = await both({ era: 'legacy', name: 'get_current_team', args: {}, headers: { 'mcp-protocol-version': '1999-01-01' } });
    expect([fastPath, answer.status]).toEqual([false, 400]);
  });
  it('modern with an Mcp-Name header that disagrees with the body is the SDK rejection', async () => {
    const { answer, fastPath } = await both({ era: 'modern', name: 'get_current_team', args: {}, headers: { 'mcp-name': 'other_tool' } });
    expect([fastPath, answer.status]).toEqual([false, 400]);
  });
  it('modern without the Mcp-Method header is the SDK rejection', async () => {
    const { answer, fastPath } = await both({ era: 'modern', name: 'get_current_team', args: {}, headers: { 'mcp-method': undefined } });
    expect([fastPath, answer.status]).toEqual([false, 400]);
  });
  it('modern with a malformed envelope is the SDK rejection', async () => {
    const { answer, fastPath } = await both({ era: 'modern', name: 'get_current_team', args: {}, meta: { 'io.modelcontextprotocol/clientInfo': 'not an object' } });
    expect([fastPath, answer.status]).toEqual([false, 400]);
  });
  it('a fast answer still charges the rate limit and carries its headers', async () => {
    const a = await request(`${fast.url}/mcp`, { method: 'POST', ...httpRequest({ era: 'modern', name: 'get_current_team', args: {} }, fast.rootToken) });
    const b = await request(`${fast.url}/mcp`, { method: 'POST', ...httpRequest({ era: 'modern', name: 'get_current_team', args: {} }, fast.rootToken) });
    await Promise.all([a.body.text(), b.body.text()]);
    expect(a.headers['content-length']).toBeDefined();
    expect(Number(b.headers['x-ratelimit-remaining'])).toBe(Number(a.headers['x-ratelimit-remaining']) - 1);
  });
});
