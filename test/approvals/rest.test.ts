import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { readPolicy, writePolicy } from '../../src/core/approvals.js';
import { loadConfig } from '../../src/config/config.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { browse, signInByLink, type ConsoleSession } from '../helpers/console.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';
import { freshKey } from '../helpers/world.js';

/**
 * Approvals over REST (issue 26): an agent's call the team's policy names answers 202 with a
 * pending approval and runs only when a team owner or admin approves it in the console, once,
 * as the token that asked. Runs on the store BERTH_TEST_STORE names (SQLite or PostgreSQL).
 */
describe('approvals over REST', { timeout: 60_000 }, () => {
  let s: TestServer;
  let owner: ConsoleSession;

  beforeAll(async () => {
    s = await startTestServer();
    owner = await signInByLink(s.url, s.db, s.ownerEmail);
    // No rule yet: setting the first policy runs at once.
    const set = await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['delete', 'stop_application', 'create_private_key'], expires_in_seconds: 600 } });
    expect(set.status).toBe(200);
    expect(set.json).toEqual({ rules: ['create_private_key', 'delete', 'stop_application'], expires_in_seconds: 600 });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  const project = async (name: string, token = s.rootToken) => {
    const r = await call(s.url, 'POST', '/api/v1/projects', { token, body: { name } });
    expect(r.status).toBe(201);
    return r.json.uuid as string;
  };
  const held = async (uuid: string, token = s.rootToken) => {
    const r = await call(s.url, 'DELETE', `/api/v1/projects/${uuid}`, { token });
    expect(r.status).toBe(202);
    expect(r.headers.location).toBe(`/api/v1/approvals/${r.json.approval.uuid}`);
    return r.json.approval as { uuid: string; status: string; approve_url: string };
  };
  const approval = async (uuid: string) => (await call(s.url, 'GET', `/api/v1/approvals/${uuid}`, { token: s.rootToken })).json;
  /** The console's approve form as its page posts it: the session's CSRF token and the arguments hash it shows. */
  const approveForm = async (uuid: string, who = owner) => ({ _csrf: who.csrf, args_hash: String((await approval(uuid)).args_hash) });
  const approveInConsole = async (uuid: string, who = owner) => browse(s.url, who.jar, 'POST', `/approvals/${uuid}/approve`, await approveForm(uuid, who));

  it('holds a delete with 202, shows what waits, and runs it once when a person approves', async () => {
    const p = await project('held');
    const a = await held(p);
    expect(a.status).toBe('pending');
    expect(a.approve_url).toMatch(new RegExp(`/approvals/${a.uuid}$`));
    // Nothing ran.
    expect((await call(s.url, 'GET', `/api/v1/projects/${p}`, { token: s.rootToken })).status).toBe(200);

    const list = await call(s.url, 'GET', '/api/v1/approvals?status=pending', { token: s.rootToken });
    expect(list.status).toBe(200);
    expect(list.json.map((x: { uuid: string }) => x.uuid)).toContain(a.uuid);
    const got = await approval(a.uuid);
    expect(got).toMatchObject({ operation: 'delete_project', rule: 'delete', target: p, status: 'pending', arguments: { uuid: p } });

    // The console page shows the exact operation, target and arguments.
    const page = await browse(s.url, owner.jar, 'GET', `/approvals/${a.uuid}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('delete_project');
    expect(page.text).toContain(p);

    const done = await approveInConsole(a.uuid);
    expect(done.status).toBe(303);
    expect(await approval(a.uuid)).toMatchObject({ status: 'succeeded', decided_via: 'console', error: null });
    expect((await call(s.url, 'GET', `/api/v1/projects/${p}`, { token: s.rootToken })).status).toBe(404);

    // A second approval is refused and runs nothing.
    const again = await approveInConsole(a.uuid);
    expect(again.status).toBe(409);
    expect((await approval(a.uuid)).status).toBe('succeeded');
  });

  it('an approval binds the arguments: the page shows their hash, another or none is refused, changed input never runs', async () => {
    const p = await project('bound');
    const decoy = await project('bound-decoy');
    const a = await held(p);
    // SHA-256 of the canonical JSON of the stored input ({"uuid": p} has one key: its JSON is canonical).
    const hash = createHash('sha256')
      .update(JSON.stringify({ uuid: p }))
      .digest('hex');
    expect(a).toMatchObject({ args_hash: hash });
    const page = await browse(s.url, owner.jar, 'GET', `/approvals/${a.uuid}`);
    expect(page.text).toContain(`>${hash.slice(0, 12)}</code>`);
    expect(page.text).toContain(`name="args_hash" value="${hash}"`);

    // A hash the person was not shown (arguments changed since the page was read): 409, nothing decided.
    const other = await browse(s.url, owner.jar, 'POST', `/approvals/${a.uuid}/approve`, { _csrf: owner.csrf, args_hash: 'a'.repeat(64) });
    expect(other.status).toBe(409);
    expect(other.text).toContain('are not the ones this call holds');
    // No hash at all (a form not made by its page): 422 naming the field.
    const none = await browse(s.url, owner.jar, 'POST', `/approvals/${a.uuid}/approve`, { _csrf: owner.csrf });
    expect(none.status).toBe(422);
    expect(none.text).toContain('the form carries the hash of the arguments it shows');
    expect((await approval(a.uuid)).status).toBe('pending');

    // The stored input changed behind the approval's back: approved with the hash shown, it is hashed again and never runs.
    await s.db
      .updateTable('approvals')
      .set({ input: JSON.stringify({ uuid: decoy }) })
      .where('uuid', '=', a.uuid)
      .execute();
    expect((await browse(s.url, owner.jar, 'POST', `/approvals/${a.uuid}/approve`, { _csrf: owner.csrf, args_hash: hash })).status).toBe(303);
    expect(await approval(a.uuid)).toMatchObject({ status: 'failed', error: { kind: 'conflict', message: expect.stringMatching(/no longer match the hash/) } });
    for (const uuid of [p, decoy]) expect((await call(s.url, 'GET', `/api/v1/projects/${uuid}`, { token: s.rootToken })).status).toBe(200);
  });

  it('shows secrets in held arguments to nobody, and runs the call with them', async () => {
    const r = await call(s.url, 'POST', '/api/v1/security/keys', { token: s.rootToken, body: { name: 'held key', private_key: freshKey() } });
    expect(r.status).toBe(202);
    expect(r.text).not.toContain('PRIVATE KEY');
    const uuid = r.json.approval.uuid as string;
    const got = await call(s.url, 'GET', `/api/v1/approvals/${uuid}`, { token: s.rootToken });
    expect(got.json.arguments).toEqual({ name: 'held key', private_key: '[redacted]' });
    expect(got.text).not.toContain('PRIVATE KEY');
    const page = await browse(s.url, owner.jar, 'GET', `/approvals/${uuid}`);
    expect(page.text).not.toContain('PRIVATE KEY');
    expect((await approveInConsole(uuid)).status).toBe(303);
    const done = await approval(uuid);
    expect(done.status).toBe('succeeded');
    // The stored result is redacted for every reader, whatever the asking token could see.
    expect(JSON.stringify(done.result)).not.toContain('PRIVATE KEY');
    const keys = await call(s.url, 'GET', '/api/v1/security/keys', { token: s.rootToken });
    expect(keys.json.map((k: { name: string }) => k.name)).toContain('held key');
  });

  it('never lets a token approve: not the one that asked, not another owner token', async () => {
    const p = await project('tokens-cannot-approve');
    const a = await held(p);
    const other = await s.token({ permissions: ['root'], role: 'owner' });
    for (const token of [s.rootToken, other.token]) {
      const r = await call(s.url, 'POST', `/api/v1/approvals/${a.uuid}/approve`, { token });
      expect(r.status).toBe(403);
      expect(r.json.message).toMatch(/never by a token/);
    }
    expect((await approval(a.uuid)).status).toBe('pending');
  });

  it('a decision is never held, whatever the policy names: a token’s approve is refused, not queued', async () => {
    const p = await project('decisions-not-held');
    const a = await held(p);
    const before = await readPolicy(s.db, s.rootTeamId);
    // Set in the store: over the API, changing a policy that holds anything waits for a person.
    await writePolicy(s.db, s.rootTeamId, { ...before, rules: [...before.rules, 'approve_approval', 'deny_approval'] });
    try {
      const pendingBefore = (await call(s.url, 'GET', '/api/v1/approvals?status=pending', { token: s.rootToken })).json.length;
      const r = await call(s.url, 'POST', `/api/v1/approvals/${a.uuid}/approve`, { token: s.rootToken });
      expect(r.status, r.text).toBe(403);
      expect((await call(s.url, 'GET', '/api/v1/approvals?status=pending', { token: s.rootToken })).json.length).toBe(pendingBefore);
      const d = await call(s.url, 'POST', `/api/v1/approvals/${a.uuid}/deny`, { token: s.rootToken });
      expect(d.status, d.text).toBe(200);
      expect((await approval(a.uuid)).status).toBe('denied');
    } finally {
      await writePolicy(s.db, s.rootTeamId, before);
    }
  });

  it('a denied call never runs, and cannot be approved afterwards', async () => {
    const p = await project('denied');
    const a = await held(p);
    const denied = await call(s.url, 'POST', `/api/v1/approvals/${a.uuid}/deny`, { token: s.rootToken });
    expect(denied.status).toBe(200);
    expect(denied.json.status).toBe('denied');
    // A token's deny names its door, not the CLI's.
    expect(denied.json.decided_via).toBe('rest');
    expect((await approveInConsole(a.uuid)).status).toBe(409);
    expect((await call(s.url, 'GET', `/api/v1/projects/${p}`, { token: s.rootToken })).status).toBe(200);
  });

  it('an expired call never runs', async () => {
    const p = await project('expired');
    const a = await held(p);
    // Its time passes (arranged in the store: the shortest policy is a minute).
    await s.db
      .updateTable('approvals')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('uuid', '=', a.uuid)
      .execute();
    expect((await approval(a.uuid)).status).toBe('expired');
    expect((await approveInConsole(a.uuid)).status).toBe(409);
    expect((await call(s.url, 'GET', `/api/v1/projects/${p}`, { token: s.rootToken })).status).toBe(200);
    const listed = await call(s.url, 'GET', '/api/v1/approvals?status=expired', { token: s.rootToken });
    expect(listed.json.map((x: { uuid: string }) => x.uuid)).toContain(a.uuid);
  });

  it("a revoked token's approved call does not run", async () => {
    const agent = await s.token({ permissions: ['read', 'write'] });
    const p = await project('revoked');
    const a = await held(p, agent.token);
    await admin.revokeToken(s.db, agent.id);
    expect((await approveInConsole(a.uuid)).status).toBe(303);
    expect(await approval(a.uuid)).toMatchObject({ status: 'failed', error: { kind: 'invalid_token' } });
    expect((await call(s.url, 'GET', `/api/v1/projects/${p}`, { token: s.rootToken })).status).toBe(200);
  });

  it('a member cannot approve in the console; another team sees nothing of these approvals', async () => {
    const p = await project('member');
    const a = await held(p);
    const member = await s.token({ permissions: ['read'], role: 'member', email: `member-${process.pid}@example.test` });
    expect(member.id).toBeGreaterThan(0);
    const m = await signInByLink(s.url, s.db, `member-${process.pid}@example.test`);
    const page = await browse(s.url, m.jar, 'GET', `/approvals/${a.uuid}`);
    expect(page.text).not.toContain('Approve and run');
    expect((await approveInConsole(a.uuid, m)).status).toBe(403);

    const other = await s.team('Elsewhere');
    const missing = await call(s.url, 'GET', '/api/v1/approvals/nosuchapprovalxxxxxxxxxx', { token: other.rootToken });
    const foreign = await call(s.url, 'GET', `/api/v1/approvals/${a.uuid}`, { token: other.rootToken });
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    expect((await call(s.url, 'POST', `/api/v1/approvals/${a.uuid}/deny`, { token: other.rootToken })).status).toBe(404);
    expect((await call(s.url, 'GET', '/api/v1/approvals', { token: other.rootToken })).json).toEqual([]);
    const otherOwner = await signInByLink(s.url, s.db, other.ownerEmail);
    expect((await browse(s.url, otherOwner.jar, 'GET', `/approvals/${a.uuid}`)).status).toBe(404);
    expect((await approveInConsole(a.uuid, otherOwner)).status).toBe(404);
    expect((await approval(a.uuid)).status).toBe('pending');
  });

  it('production_env holds shared variables that reach production: its environment, and the team, project or server of a production resource', async () => {
    // A team of its own: its first policy is set at once, and this file's other policy stays.
    const t = await s.team(`Prod ${process.pid}`);
    const agent = (await s.token({ permissions: ['read', 'write'], team: t.id })).token;
    expect((await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: t.rootToken, body: { rules: ['production_env'] } })).status).toBe(200);
    const made = async (method: string, path: string, body: unknown) => {
      const r = await call(s.url, method, path, { token: t.rootToken, body });
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(201);
      return r.json;
    };
    const send = async (method: string, path: string, body: Record<string, unknown> = { key: 'DATABASE_URL', value: 'postgres://evil' }) =>
      (await call(s.url, method, path, { token: agent, body })).status;
    const server = (await made('POST', '/api/v1/servers', { name: 'prod-one', ip: '10.0.0.1' })).uuid;
    const idle = (await made('POST', '/api/v1/servers', { name: 'idle-one', ip: '10.0.0.2' })).uuid;
    const live = (await made('POST', '/api/v1/projects', { name: 'live' })).uuid;
    const empty = (await made('POST', '/api/v1/projects', { name: 'empty' })).uuid;
    await made('POST', `/api/v1/projects/${live}/environments`, { name: 'staging' });
    // Before any resource is in production, a team variable reaches none: it runs.
    const teamVar = (await made('POST', '/api/v1/team/envs', { key: 'REGION', value: 'eu' })).id;
    expect(await send('PATCH', `/api/v1/team/envs/${teamVar}`, { value: 'us' })).toBe(201);
    await made('POST', '/api/v1/applications/dockerimage', {
      project_uuid: live,
      server_uuid: server,
      environment_name: 'production',
      docker_registry_image_name: 'nginx',
      docker_registry_image_tag: '1.27',
      ports_exposes: '80',
    });

    // An environment that is production, even an empty one, and every scope over a production resource: held.
    expect(await send('POST', `/api/v1/projects/${live}/environments/production/envs`)).toBe(202);
    expect(await send('POST', `/api/v1/projects/${empty}/environments/production/envs`)).toBe(202);
    expect(await send('POST', `/api/v1/projects/${live}/envs`)).toBe(202);
    expect(await send('POST', `/api/v1/servers/${server}/envs`)).toBe(202);
    expect(await send('POST', '/api/v1/team/envs')).toBe(202);
    expect(await send('PATCH', `/api/v1/team/envs/${teamVar}`, { value: 'x' })).toBe(202);
    expect(await send('DELETE', `/api/v1/team/envs/${teamVar}`, {})).toBe(202);
    // Scopes that reach no production resource: they run.
    expect(await send('POST', `/api/v1/projects/${live}/environments/staging/envs`)).toBe(201);
    expect(await send('POST', `/api/v1/projects/${empty}/envs`)).toBe(201);
    expect(await send('POST', `/api/v1/servers/${idle}/envs`)).toBe(201);
    // Nothing held ran.
    const listed = await call(s.url, 'GET', `/api/v1/projects/${live}/environments/production/envs`, { token: t.rootToken });
    expect(listed.json).toEqual([]);
    expect((await call(s.url, 'GET', '/api/v1/team/envs', { token: t.rootToken })).json.map((e: { key: string }) => e.key)).toEqual(['REGION']);
  });

  it('changing the policy while it holds anything waits for a person too', async () => {
    const r = await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: [] } });
    expect(r.status).toBe(202);
    expect(r.json.approval).toMatchObject({ operation: 'update_approval_policy', rule: 'approval_policy' });
    expect((await call(s.url, 'GET', '/api/v1/approvals/policy', { token: s.rootToken })).json.rules).toEqual(['create_private_key', 'delete', 'stop_application']);
    const bad = await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['no_such_operation'] } });
    expect(bad.status).toBe(422);
  });

  it('two instances approving the same call at once run it once', async () => {
    // A second berth instance on the same store, as behind a load balancer.
    const config = loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: s.dataDir, databaseUrl: storeUrlFor(s.dataDir), host: '127.0.0.1', port: 0 });
    const second: RunningServer = await startServer(config, () => {});
    try {
      for (let round = 0; round < 3; round++) {
        const p = await project(`race-${round}`);
        const a = await held(p);
        const form = await approveForm(a.uuid);
        const [one, two] = await Promise.all([browse(s.url, owner.jar, 'POST', `/approvals/${a.uuid}/approve`, form), browse(second.url, owner.jar, 'POST', `/approvals/${a.uuid}/approve`, form)]);
        expect([one.status, two.status].sort()).toEqual([303, 409]);
        expect(await approval(a.uuid)).toMatchObject({ status: 'succeeded' });
        const runs = await call(s.url, 'GET', `/api/v1/audit?operation=delete_project&resource=${p}&result=ok`, { token: s.rootToken });
        expect(runs.json).toHaveLength(1);
      }
    } finally {
      await second.close();
    }
  });
});
