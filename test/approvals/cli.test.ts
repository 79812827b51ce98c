import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBerth } from '../helpers/cli-run.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';

/**
 * `berth approvals` (the built CLI) on a running instance's store: the operator lists what waits
 * and decides as a named person; only an owner or admin of the team approves, and the call runs
 * once, as the token that asked.
 */
describe('berth approvals', { timeout: 90_000 }, () => {
  let s: TestServer;
  const berth = (...args: string[]) => runBerth([...args, '--data', s.dataDir], { cwd: s.dataDir, env: { LOG_LEVEL: 'silent', ...storeEnv(s.dataDir) } });

  beforeAll(async () => {
    s = await startTestServer();
    expect((await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['delete'] } })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('lists the held call, refuses a member, and approves it once as an owner', async () => {
    const p = (await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'cli' } })).json.uuid as string;
    const held = await call(s.url, 'DELETE', `/api/v1/projects/${p}`, { token: s.rootToken });
    expect(held.status).toBe(202);
    const uuid = held.json.approval.uuid as string;

    const list = await berth('approvals', 'list', '--team', String(s.rootTeamId), '--json');
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ uuid, status: 'pending', operation: 'delete_project', target: p })]);

    await s.token({ permissions: ['read'], role: 'member', email: 'cli-member@example.test' });
    const refused = await berth('approvals', 'approve', uuid, '--email', 'cli-member@example.test');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/never by a token|owner or admin/);

    const ok = await berth('approvals', 'approve', uuid, '--email', s.ownerEmail, '--json');
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ uuid, status: 'succeeded', decided_via: 'cli' });
    expect((await call(s.url, 'GET', `/api/v1/projects/${p}`, { token: s.rootToken })).status).toBe(404);

    const again = await berth('approvals', 'approve', uuid, '--email', s.ownerEmail);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/decided only once/);
  });
});
