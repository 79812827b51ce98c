import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpClient, stdioClient, type AnyClient } from '../helpers/mcp.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { AuditDoor } from '../../src/store/schema-audit.js';

/**
 * The audit log through both MCP transports with real SDK clients: each change is one entry
 * naming its door, secrets planted in the arguments never stored; list_audit_entries reads the
 * team's log and is not in the default list. Runs on the store BERTH_TEST_STORE names.
 */

let s: TestServer;
let token: { id: number; token: string };
const SECRET = 'planted-mcp-secret-93ad2c';

beforeAll(async () => {
  s = await startTestServer();
  token = await s.token({ permissions: ['read', 'write'], email: 'agent@example.test' });
});
afterAll(() => s.stop());

async function rows(door: AuditDoor) {
  return s.db.selectFrom('audit_log').selectAll().where('door', '=', door).orderBy('id').execute();
}

describe.each([
  ['mcp-http', () => httpClient('v2-modern', s.url, token.token)],
  ['mcp-stdio', () => stdioClient('v2-modern', s.dataDir, token.token)],
] as const)('audit log over %s', (door, connect) => {
  let c: AnyClient;
  beforeAll(async () => {
    c = await connect();
  });
  afterAll(() => c.close());

  it('writes one entry per change with the secrets redacted', async () => {
    const key = `MCP_${door.replace('-', '_').toUpperCase()}`;
    const created = await c.callTool('create_team_shared_env', { key, value: SECRET });
    expect(created.isError).toBeFalsy();
    const refused = await c.callTool('create_team_shared_env', { key, value: SECRET });
    expect(refused.isError).toBe(true);
    // Reads leave nothing.
    expect((await c.callTool('list_projects', {})).isError).toBeFalsy();

    const mine = await rows(door);
    expect(mine.map((r) => [r.operation, r.result, r.status])).toEqual([
      ['create_team_shared_env', 'ok', 201],
      ['create_team_shared_env', 'conflict', 409],
    ]);
    expect(mine[0]).toMatchObject({ team_id: s.rootTeamId, token_id: token.id, source_ip: '127.0.0.1' });
    expect(JSON.parse(mine[0]!.arguments!)).toEqual({ key, value: '[redacted]' });
    expect(JSON.stringify(await s.db.selectFrom('audit_log').selectAll().execute())).not.toContain(SECRET);
  });

  it('reads the log with list_audit_entries', async () => {
    const r = await c.callTool('list_audit_entries', { operation: 'create_team_shared_env', result: 'ok' });
    expect(r.isError).toBeFalsy();
    const page = r.structuredContent as { items: Array<{ door: string; user_email: string }>; total: number };
    expect(page.items.map((e) => e.door)).toContain(door);
    expect(page.items.every((e) => e.user_email === 'agent@example.test')).toBe(true);
  });
});

describe('the audit tool', () => {
  it('is not in the default list, but in the audit toolset', async () => {
    const byDefault = await httpClient('v2-modern', s.url, token.token, { 'X-Berth-Toolsets': 'default' });
    const audit = await httpClient('v2-modern', s.url, token.token, { 'X-Berth-Toolsets': 'audit' });
    try {
      expect((await byDefault.listTools()).tools.map((t) => t.name)).not.toContain('list_audit_entries');
      expect((await audit.listTools()).tools.map((t) => t.name)).toContain('list_audit_entries');
    } finally {
      await byDefault.close();
      await audit.close();
    }
  });
});
