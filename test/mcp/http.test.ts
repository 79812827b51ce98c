import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { operations } from '../../src/core/operations/index.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { CLIENT_KINDS, errorBody, httpClient } from '../helpers/mcp.js';

let s: TestServer;
let other: { id: number; rootToken: string };
beforeAll(async () => {
  s = await startTestServer();
  other = await s.team('Neighbours');
});
afterAll(() => s.stop());

const names = async (token: string, headers?: Record<string, string>) => {
  const c = await httpClient('v2-modern', s.url, token, headers);
  try {
    return (await c.listTools()).tools.map((t) => t.name).sort();
  } finally {
    await c.close();
  }
};

describe.each(CLIENT_KINDS)('MCP over streamable HTTP with the %s client', (kind) => {
  it('lists every tool for a root token of the root team, each with schemas and annotations', async () => {
    const c = await httpClient(kind, s.url, s.rootToken);
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(operations.map((o) => o.name).sort());
    for (const t of tools) {
      expect(t.outputSchema).toBeTruthy();
      // Hints are sent only where they differ from MCP's defaults; read tools always say so.
      expect(t.annotations?.readOnlyHint ?? false).toBe(operations.find((o) => o.name === t.name)!.annotations.readOnly);
    }
    await c.close();
  });

  it('get_current_team returns structured content matching the REST answer', async () => {
    const c = await httpClient(kind, s.url, s.rootToken);
    const r = await c.callTool('get_current_team');
    expect(r.isError).toBeFalsy();
    const rest = await call(s.url, 'GET', '/api/v1/teams/current', { token: s.rootToken });
    expect(r.structuredContent).toEqual(rest.json);
    expect(JSON.parse(r.content[0]!.text!)).toEqual(rest.json);
    const list = await c.callTool('list_teams');
    expect(list.structuredContent).toEqual({ items: [rest.json] });
    await c.close();
  });

  it('not found, validation and unknown tools come back as errors with the REST bodies and a hint', async () => {
    const c = await httpClient(kind, s.url, s.rootToken);
    const foreign = errorBody(await c.callTool('get_team', { id: other.id }));
    const missing = errorBody(await c.callTool('get_team', { id: 99999 }));
    expect(foreign).toEqual({ message: 'Resource not found.', hint: expect.stringContaining('list_teams') });
    expect(missing).toEqual(foreign);
    const invalid = errorBody(await c.callTool('send_feedback', { content: 'short', extra: 1 }));
    expect(invalid.message).toBe('Validation error.');
    expect(Object.keys(invalid.errors as object).sort()).toEqual(['content', 'extra']);
    await expect(c.callTool('no_such_tool')).rejects.toThrow(/not found/i);
    await c.close();
  });
});

describe('tool visibility', () => {
  const namesWhere = (pred: (o: (typeof operations)[number]) => boolean) =>
    operations
      .filter(pred)
      .map((o) => o.name)
      .sort();

  it('a read token sees only read tools (and feedback), never write, deploy, secret or root tools', async () => {
    const t = await s.token({ permissions: ['read'] });
    const list = await names(t.token);
    expect(list).toEqual(namesWhere((o) => o.permission === 'read' || o.permission === 'authenticated'));
    expect(list).toEqual(expect.arrayContaining(['get_current_team', 'list_applications', 'get_deployment', 'list_servers']));
    for (const hidden of ['create_application', 'deploy', 'migrate_application', 'get_application_logs', 'disable_api']) expect(list).not.toContain(hidden);
  });

  it('read:sensitive adds the log tools; deploy sees only deploy tools', async () => {
    const sens = await names((await s.token({ permissions: ['read:sensitive'] })).token);
    expect(sens).toContain('get_application_logs');
    expect(sens).toContain('list_applications');
    const dep = await names((await s.token({ permissions: ['deploy'] })).token);
    expect(dep).toEqual(namesWhere((o) => o.permission === 'deploy' || o.permission === 'authenticated'));
    expect(dep).toContain('deploy');
    expect(dep).not.toContain('list_applications');
  });

  it('a write-only token sees write tools and no read tools', async () => {
    const t = await s.token({ permissions: ['write'] });
    const list = await names(t.token);
    expect(list).toEqual(namesWhere((o) => o.permission === 'write' || o.permission === 'authenticated'));
    expect(list).toContain('migrate_service');
    expect(list).not.toContain('get_current_team');
  });

  it("another team's root token does not see the instance-wide tools", async () => {
    const list = await names(other.rootToken);
    expect(list).not.toContain('disable_api');
    expect(list).not.toContain('update_settings');
    expect(list).toContain('get_current_team');
  });

  it('X-Berth-Read-Only: true keeps only read-only tools; calling a hidden one names what it needs (issue 22)', async () => {
    const list = await names(s.rootToken, { 'X-Berth-Read-Only': 'true' });
    expect(list).toEqual(namesWhere((o) => o.annotations.readOnly));
    expect(list).toContain('get_settings');
    expect(list).not.toContain('deploy');
    const c = await httpClient('v2-modern', s.url, s.rootToken, { 'X-Berth-Read-Only': 'true' });
    expect(errorBody(await c.callTool('disable_api'))).toEqual({
      message: 'Missing required permissions: root',
      missing_permissions: ['root'],
      hint: expect.stringContaining('read-only'),
    });
    await expect(c.callTool('no_such_tool')).rejects.toThrow(/not found/i);
    await c.close();
    // call_operation is there when some tools stay unlisted (the default set).
    const d = await httpClient('v1', s.url, s.rootToken, { 'X-Berth-Read-Only': 'true', 'X-Berth-Toolsets': 'default' });
    expect(errorBody(await d.callTool('call_operation', { name: 'create_project', arguments: { name: 'nope' } }))).toMatchObject({ missing_permissions: ['write'] });
    await d.close();
    // Nothing ran: the API is still on.
    expect((await call(s.url, 'GET', '/api/v1/settings', { token: s.rootToken })).json).toMatchObject({ api_enabled: true });
  });

  it('a tool the token may not use answers the permission it needs and the ones it has, called directly or via call_operation', async () => {
    const reader = await s.token({ permissions: ['read'] });
    for (const kind of CLIENT_KINDS) {
      const rc = await httpClient(kind, s.url, reader.token);
      const direct = errorBody(await rc.callTool('update_settings', { allowed_ips: '' }));
      expect(direct).toEqual({
        message: 'Missing required permissions: root',
        missing_permissions: ['root'],
        token_permissions: ['read'],
        hint: expect.stringContaining('(it has read)'),
      });
      await rc.close();
      const dc = await httpClient(kind, s.url, reader.token, { 'X-Berth-Toolsets': 'default' });
      const viaCall = errorBody(await dc.callTool('call_operation', { name: 'create_project', arguments: { name: 'nope' } }));
      expect(viaCall).toMatchObject({ message: 'Missing required permissions: write', missing_permissions: ['write'], token_permissions: ['read'] });
      await dc.close();
    }
    // Another team's root token: the root team's switches answer the same for every team, naming nothing of it.
    const oc = await httpClient('v2-modern', s.url, other.rootToken);
    expect(errorBody(await oc.callTool('disable_api'))).toMatchObject({ message: "Only a token of the instance's root team may do this." });
    await oc.close();
    expect((await call(s.url, 'GET', '/api/v1/settings', { token: s.rootToken })).json).toMatchObject({ api_enabled: true, allowed_ips: '' });
  });

  it("an admin's root token demoted to member loses root over MCP at the next request, and regains it", async () => {
    const email = `mcp-demoted-${Date.now()}@example.test`;
    const t = await s.token({ permissions: ['read', 'root'], role: 'admin', email });
    const c = await httpClient('v2-modern', s.url, t.token);
    expect((await c.callTool('get_settings')).isError).toBeFalsy();
    await admin.addMember(s.db, { team: String(s.rootTeamId), email, role: 'member' });
    expect(errorBody(await c.callTool('get_settings'))).toMatchObject({ missing_permissions: ['root'], token_permissions: ['read'] });
    const d = await httpClient('v2-legacy', s.url, t.token, { 'X-Berth-Toolsets': 'default' });
    expect(errorBody(await d.callTool('call_operation', { name: 'disable_mcp' }))).toMatchObject({ missing_permissions: ['root'] });
    await d.close();
    await admin.addMember(s.db, { team: String(s.rootTeamId), email, role: 'admin' });
    expect((await c.callTool('get_settings')).isError).toBeFalsy();
    await c.close();
  });

  it('team isolation: a neighbour token sees its own team only', async () => {
    const c = await httpClient('v2-modern', s.url, other.rootToken);
    expect((await c.callTool('get_current_team')).structuredContent).toMatchObject({ id: other.id });
    expect(errorBody(await c.callTool('get_team', { id: s.rootTeamId }))).toMatchObject({ message: 'Resource not found.' });
    await c.close();
  });
});

describe('HTTP transport rules', () => {
  const rpc = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const accept = { accept: 'application/json, text/event-stream' };

  it('no token → 401 with WWW-Authenticate; bad token → 401 Invalid token.', async () => {
    const r = await call(s.url, 'POST', '/mcp', { body: rpc, headers: accept });
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(r.json).toEqual({ message: 'Unauthenticated.' });
    expect((await call(s.url, 'POST', '/mcp', { body: rpc, headers: accept, token: '1|wrong' })).json).toEqual({ message: 'Invalid token.' });
  });

  it('GET and DELETE /mcp → 405', async () => {
    for (const m of ['GET', 'DELETE']) {
      const r = await call(s.url, m, '/mcp', { token: s.rootToken });
      expect(r.status).toBe(405);
      expect(r.headers.allow).toBe('POST');
    }
  });

  it('a foreign Origin → 403; a Host other than loopback → 403 (DNS rebinding)', async () => {
    const o = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: { ...accept, origin: 'http://evil.example' } });
    expect(o.status).toBe(403);
    expect(o.json).toEqual({ message: 'Origin not allowed.' });
    const h = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: { ...accept, host: 'evil.example:8000' } });
    expect(h.status).toBe(403);
    expect(h.json).toEqual({ message: 'Host not allowed.' });
    const ok = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: { ...accept, host: 'localhost:1234' } });
    expect(ok.status).toBe(200);
  });

  it('an unsupported MCP-Protocol-Version → 400', async () => {
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const r = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: list, headers: { ...accept, 'mcp-protocol-version': '1999-01-01' } });
    expect(r.status).toBe(400);
  });

  const toolCall = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const modern = { ...accept, 'mcp-protocol-version': '2025-11-25' };

  it('a JSON-RPC batch is refused with 400 and a JSON-RPC error, runs nothing, and costs one request (issue 22)', async () => {
    const t = await s.token({ permissions: ['read', 'write'] });
    const before = await call(s.url, 'GET', '/api/v1/tags', { token: t.token });
    const remaining = Number(before.headers['x-ratelimit-remaining']);
    const batch = Array.from({ length: 20 }, (_, i) => toolCall(i + 1, 'create_tag', { name: `batched-${i}` }));
    const r = await call(s.url, 'POST', '/mcp', { token: t.token, body: batch, headers: modern });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/batch/i) } });
    expect(Number(r.headers['x-ratelimit-remaining'])).toBe(remaining - 1);
    const after = await call(s.url, 'GET', '/api/v1/tags', { token: t.token });
    expect(after.json.filter((x: { name: string }) => x.name.startsWith('batched-'))).toEqual([]);
    // A one-element batch is a batch too.
    expect((await call(s.url, 'POST', '/mcp', { token: t.token, body: [toolCall(1, 'list_tags')], headers: modern })).status).toBe(400);
  });

  it('a body that is not sent as JSON is a JSON-RPC parse error (400), whatever its type, and runs nothing', async () => {
    const t = await s.token({ permissions: ['read', 'write'] });
    const text = JSON.stringify(toolCall(1, 'create_tag', { name: 'sent-as-text' }));
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream']) {
      const r = await call(s.url, 'POST', '/mcp', { token: t.token, body: text, headers: { ...modern, 'content-type': type } });
      expect(r.status, type).toBe(400);
      expect(r.json, type).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: Send the body as application/json.' } });
    }
    const tags = await call(s.url, 'GET', '/api/v1/tags', { token: t.token });
    expect(tags.json.filter((x: { name: string }) => x.name === 'sent-as-text')).toEqual([]);
  });

  it('X-Berth-Read-Only accepts exactly true or false; anything else is a 422, never a wider session', async () => {
    for (const v of ['1', 'yes', 'TRUE', 'True', 'on', '']) {
      const r = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: { ...accept, 'x-berth-read-only': v } });
      expect(r.status, JSON.stringify(v)).toBe(422);
      expect(r.json).toEqual({ message: 'Validation error.', errors: { 'x-berth-read-only': ['Must be true or false.'] } });
    }
    for (const v of ['true', 'false']) {
      expect((await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: { ...accept, 'x-berth-read-only': v } })).status).toBe(200);
    }
  });

  it("an operation's own limit holds over MCP, by its tool and through call_operation (feedback: 10 a minute per address)", async () => {
    const t = await s.token({ permissions: ['read'] });
    const from = '127.0.0.77';
    const answers: number[] = [];
    for (let i = 0; i < 12; i++) {
      const body =
        i % 2
          ? toolCall(i, 'send_feedback', { content: `feedback number ${i} over mcp` })
          : toolCall(i, 'call_operation', { name: 'send_feedback', arguments: { content: `feedback number ${i} via call_operation` } });
      const r = await call(s.url, 'POST', '/mcp', { token: t.token, body, headers: modern, from });
      answers.push(r.status);
    }
    expect(answers.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(answers.slice(10)).toEqual([429, 429]);
    // REST shares the same bucket: the address is spent there too.
    const rest = await call(s.url, 'POST', '/api/feedback', { token: t.token, body: { content: 'and one more over rest' }, from });
    expect(rest.status).toBe(429);
  });

  it('the API toggle applies to /mcp', async () => {
    await call(s.url, 'POST', '/api/v1/disable', { token: s.rootToken });
    try {
      const r = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: accept });
      expect(r.status).toBe(403);
      expect(r.json).toEqual({ message: 'API is disabled.' });
    } finally {
      await call(s.url, 'POST', '/api/v1/enable', { token: s.rootToken });
    }
  });

  it('the MCP toggle closes /mcp alone: the REST API keeps answering; a neighbour team cannot flip it', async () => {
    const neighbour = (await s.team('mcp-neighbour')).rootToken;
    expect((await call(s.url, 'POST', '/api/v1/mcp/disable', { token: neighbour })).status).toBe(403);
    const off = await call(s.url, 'POST', '/api/v1/mcp/disable', { token: s.rootToken });
    expect(off.json).toEqual({ message: 'MCP server disabled.' });
    try {
      const r = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: accept });
      expect(r.status).toBe(403);
      expect(r.json).toEqual({ message: 'MCP server is disabled.' });
      expect((await call(s.url, 'GET', '/api/v1/settings', { token: s.rootToken })).json).toMatchObject({ api_enabled: true, mcp_enabled: false });
      expect((await call(s.url, 'GET', '/api/v1/teams/current', { token: s.rootToken })).status).toBe(200);
    } finally {
      expect((await call(s.url, 'POST', '/api/v1/mcp/enable', { token: s.rootToken })).json).toEqual({ message: 'MCP server enabled.' });
    }
    expect((await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: rpc, headers: accept })).status).toBe(200);
  });
});
