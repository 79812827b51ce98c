import { spawn } from 'node:child_process';
import { storeEnv } from '../helpers/store.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { CLI, CLIENT_KINDS, errorBody, stdioClient } from '../helpers/mcp.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** Runs `berth mcp` with raw stdin lines; returns stdout lines, stderr and the exit code. */
function rawStdio(env: Record<string, string>, lines: unknown[], waitFor = lines.filter((l) => (l as { id?: unknown }).id !== undefined).length) {
  return new Promise<{ out: string[]; err: string; code: number | null }>((resolve) => {
    const p = spawn(process.execPath, [CLI, 'mcp', '--data', s.dataDir], { env: { PATH: process.env.PATH, LOG_LEVEL: 'debug', ...storeEnv(s.dataDir), ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => {
      out += d;
      if (out.split('\n').filter(Boolean).length >= waitFor) p.stdin.end();
    });
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => resolve({ out: out.split('\n').filter(Boolean), err, code }));
    for (const l of lines) p.stdin.write((typeof l === 'string' ? l : JSON.stringify(l)) + '\n');
    if (waitFor === 0) p.stdin.end();
  });
}

describe.each(CLIENT_KINDS)('MCP over stdio with the %s client', (kind) => {
  it('lists tools for the token and answers get_current_team from the same store as serve', async () => {
    const c = await stdioClient(kind, s.dataDir, s.rootToken);
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name)).toContain('get_current_team');
    const r = await c.callTool('get_current_team');
    expect(r.structuredContent).toMatchObject({ id: s.rootTeamId, name: 'Root Team' });
    await c.close();
  });
});

describe('berth mcp (stdio)', () => {
  it('stdout carries only JSON-RPC, even with debug logging; logs go to stderr; the token never appears', async () => {
    const { out, err } = await rawStdio({ BERTH_TOKEN: s.rootToken }, [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_current_team', arguments: {} } },
    ]);
    expect(out.length).toBe(2);
    for (const line of out) expect(JSON.parse(line).jsonrpc).toBe('2.0');
    expect(err).toContain('berth mcp ready');
    const secret = s.rootToken.split('|')[1]!;
    expect(out.join('\n') + err).not.toContain(secret);
  }, 90_000); // spawns berth mcp with debug logging: slow on a loaded machine

  it('deep tool arguments answer JSON-RPC invalid params (-32602); prototype keys the contract 422 (issue 22)', async () => {
    // Sent as text: the test's own JSON.stringify would overflow on it.
    const deep = '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000);
    const { out } = await rawStdio(
      { BERTH_TOKEN: s.rootToken },
      [
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_current_team","arguments":{"deep":${deep}}}}`,
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_current_team","arguments":{"__proto__":{"x":1}}}}',
        { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'get_current_team', arguments: {} } },
      ],
      4,
    );
    const byId = new Map(out.map((l) => JSON.parse(l)).map((m) => [m.id, m]));
    expect(byId.get(2)).toMatchObject({ error: { code: -32602, message: expect.stringContaining('nested more than') } });
    const proto = byId.get(3).result;
    expect(proto.isError).toBe(true);
    expect(JSON.parse(proto.content[0].text)).toMatchObject({ message: 'Validation error.', errors: { __proto__: ['This key is not allowed.'] } });
    // The session goes on.
    expect(byId.get(4).result.structuredContent).toMatchObject({ id: s.rootTeamId });
  }, 90_000); // a spawned berth mcp parsing 10,000 levels of JSON: slow on a loaded machine

  it('a missing or bad token fails at start: a clear message on stderr, nothing on stdout, non-zero exit', async () => {
    for (const env of [{}, { BERTH_TOKEN: '1|not-the-secret' }, { BERTH_TOKEN: 'garbage' }] as Record<string, string>[]) {
      const r = await rawStdio(env, [], 0);
      expect(r.code).not.toBe(0);
      expect(r.out).toEqual([]);
      expect(r.err).toMatch(/BERTH_TOKEN/);
    }
  });

  it('--read-only and --toolsets narrow the list', async () => {
    const c = await stdioClient('v2-legacy', s.dataDir, s.rootToken, ['--read-only', '--toolsets', 'settings']);
    // The rest stays reachable through the meta tools (read-only: enable and call reach read tools only).
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['get_settings', 'list_toolsets', 'enable_toolsets', 'describe_operation', 'call_operation']);
    await c.close();
  });

  it('the API toggle applies per call; enable_api stays reachable; revocation takes effect at once', async () => {
    const c = await stdioClient('v2-legacy', s.dataDir, s.rootToken);
    expect((await c.callTool('disable_api')).structuredContent).toEqual({ message: 'API disabled.' });
    expect(errorBody(await c.callTool('get_current_team'))).toEqual({ message: 'API is disabled.', hint: expect.stringContaining('enable_api') });
    expect((await c.callTool('enable_api')).structuredContent).toEqual({ message: 'API enabled.' });
    expect((await c.callTool('get_current_team')).isError).toBeFalsy();
    // The MCP toggle: every call refused but enable_mcp, the way back for a local agent.
    expect((await c.callTool('disable_mcp')).structuredContent).toEqual({ message: 'MCP server disabled.' });
    expect(errorBody(await c.callTool('get_current_team'))).toEqual({ message: 'MCP server is disabled.', hint: expect.stringContaining('enable_mcp') });
    expect((await c.callTool('enable_mcp')).structuredContent).toEqual({ message: 'MCP server enabled.' });
    expect((await c.callTool('get_current_team')).isError).toBeFalsy();
    await c.close();

    const t = await s.token({ permissions: ['read'] });
    const rc = await stdioClient('v1', s.dataDir, t.token);
    expect((await rc.callTool('get_current_team')).isError).toBeFalsy();
    await admin.revokeToken(s.db, t.id);
    expect(errorBody(await rc.callTool('get_current_team'))).toEqual({ message: 'Invalid token.', hint: expect.stringContaining('new one') });
    await rc.close();
  });

  it("a role change applies at the next call: a demoted admin's root token loses root, a promoted one gets it back (issue 22)", async () => {
    const email = `stdio-demoted-${Date.now()}@example.test`;
    const t = await s.token({ permissions: ['read', 'root'], role: 'admin', email });
    const c = await stdioClient('v2-modern', s.dataDir, t.token);
    expect((await c.callTool('get_settings')).isError).toBeFalsy();
    await admin.addMember(s.db, { team: String(s.rootTeamId), email, role: 'member' });
    expect(errorBody(await c.callTool('get_settings'))).toMatchObject({ message: 'Missing required permissions: root', token_permissions: ['read'] });
    expect(errorBody(await c.callTool('disable_api'))).toMatchObject({ missing_permissions: ['root'] });
    await admin.addMember(s.db, { team: String(s.rootTeamId), email, role: 'admin' });
    expect((await c.callTool('get_settings')).isError).toBeFalsy();
    await c.close();
    // A member started without root, promoted and given no new token: what the token lists is what it gets.
    const m = `stdio-member-${Date.now()}@example.test`;
    const mt = await s.token({ permissions: ['read'], role: 'member', email: m });
    const mc = await stdioClient('v1', s.dataDir, mt.token);
    expect(errorBody(await mc.callTool('get_settings'))).toMatchObject({ missing_permissions: ['root'], token_permissions: ['read'] });
    await mc.close();
  });

  it("an operation's own limit holds over stdio (feedback: 10 a minute per address)", async () => {
    const t = await s.token({ permissions: ['read'] });
    const c = await stdioClient('v2-legacy', s.dataDir, t.token);
    const results = [];
    for (let i = 0; i < 11; i++) results.push(await c.callTool('send_feedback', { content: `stdio feedback number ${i}` }));
    expect(results.slice(0, 10).map((r) => r.isError ?? false)).toEqual(Array(10).fill(false));
    expect(errorBody(results[10]!)).toMatchObject({ message: 'Too many requests.' });
    await c.close();
  });
});
