import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../src/core/operations/index.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** Minimal valid input per operation, so that a permitted call gets past validation. */
function sample(name: string, teamId: number): { path: Record<string, string>; body?: unknown } {
  switch (name) {
    case 'get_team':
    case 'list_team_members':
      return { path: { id: String(teamId) } };
    case 'send_feedback':
      return { path: {}, body: { content: 'a useful remark about berth' } };
    case 'update_settings':
      return { path: {}, body: { api_enabled: true } };
    default:
      return { path: {} };
  }
}

const grants = {
  read: ['read'],
  'read:sensitive': ['read:sensitive'],
  write: ['write'],
  deploy: ['deploy'],
  root: ['root'],
} as const;

/** Whether a token with these permissions may run an operation needing `required`. */
function expectedAllowed(granted: readonly string[], required: string): boolean {
  if (required === 'authenticated' || granted.includes('root')) return true;
  if (granted.includes(required)) return true;
  return required === 'read' && granted.includes('read:sensitive');
}

describe('permission matrix (root team, so only permissions decide)', () => {
  for (const op of operations) {
    it(`${op.http.method} ${op.http.path} requires ${op.permission}`, async () => {
      for (const [label, perms] of Object.entries(grants)) {
        const role = (perms as readonly string[]).includes('root') ? 'admin' : 'member';
        const t = await s.token({ permissions: [...perms], role });
        const { path, body } = sample(op.name, s.rootTeamId);
        const url = op.http.path.replace(/\{(\w+)\}/g, (_, k: string) => path[k]!);
        const r = await call(s.url, op.http.method, url, { token: t.token, body });
        const allowed = expectedAllowed(perms, op.permission);
        if (allowed) {
          expect(r.status, `${label} on ${op.name}: ${r.text}`).toBe(op.http.status ?? 200);
        } else {
          expect(r.status, `${label} on ${op.name}`).toBe(403);
          expect(r.json).toEqual({ message: `Missing required permissions: ${op.permission}`, missing_permissions: [op.permission] });
        }
      }
      // Leave the instance as it was for the next operation.
      await call(s.url, 'POST', '/api/v1/enable', { token: s.rootToken });
    });
  }

  it('every operation requires exactly one of read, write, deploy (root for the toggle and settings)', () => {
    for (const op of operations) expect(['read', 'write', 'deploy', 'root', 'authenticated']).toContain(op.permission);
    const rootOnly = operations.filter((o) => o.permission === 'root').map((o) => o.name).sort();
    expect(rootOnly).toEqual(['disable_api', 'enable_api', 'get_settings', 'update_settings']);
  });

  it('write does not imply read', async () => {
    const t = await s.token({ permissions: ['write', 'deploy'] });
    const r = await call(s.url, 'GET', '/api/v1/teams', { token: t.token });
    expect(r.status).toBe(403);
    expect(r.json.missing_permissions).toEqual(['read']);
  });
});
