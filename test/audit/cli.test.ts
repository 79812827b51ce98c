import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Db } from '../../src/store/db.js';
import { runBerth } from '../helpers/cli-run.js';
import { tempDir } from '../helpers/server.js';
import { storeEnv, storeUrlFor } from '../helpers/store.js';

/**
 * The audit log's `cli` door (issue 26): every change the admin CLI makes on the store leaves one
 * entry, ok or not, in the team it concerns (the root team's for users, settings and sign-in
 * links), with no token, no address and the person it was made for. The secrets the CLI prints
 * (the root token, a new token, a sign-in link) are stored nowhere in the log.
 * Spawns the built CLI; runs on the store BERTH_TEST_STORE names.
 */
describe('audit log: the cli door', { timeout: 120_000 }, () => {
  const dir = tempDir();
  const berth = (...args: string[]) => runBerth([...args, '--data', dir], { cwd: dir, env: { LOG_LEVEL: 'silent', ...storeEnv(dir) } });
  const ok = async (...args: string[]) => {
    const r = await berth(...args);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };
  let db: Db;
  const secrets: string[] = [];
  let rootTeamId = 0;

  beforeAll(async () => {
    const init = JSON.parse(await ok('init', '--email', 'Root@Example.test', '--json'));
    secrets.push(init.token);
    rootTeamId = init.team.id;
    db = await openStore(dir, storeUrlFor(dir));
  }, 60_000);
  afterAll(async () => {
    await db?.destroy();
  });

  const log = async (team: string) => JSON.parse(await ok('audit', '--team', team, '--json')).items as any[];

  it('records each change once, in its team, for the person named, without the secrets it printed', async () => {
    await ok('user', 'create', '--email', 'alice@example.test');
    await ok('user', 'create', '--email', 'bob@example.test');
    const team = JSON.parse(await ok('team', 'create', '--name', 'Ops', '--owner', 'alice@example.test', '--json'));
    await ok('team', 'add-member', '--team', 'Ops', '--email', 'bob@example.test', '--role', 'member');
    const token = JSON.parse(await ok('token', 'create', '--email', 'bob@example.test', '--team', 'Ops', '--name', 'ci', '--permissions', 'read,write', '--expires', '30d', '--json'));
    secrets.push(token.token);
    const link = JSON.parse(await ok('login-link', '--email', 'alice@example.test', '--json'));
    // The link's secret: its longest run of token characters.
    const linkSecret = (link.url as string).match(/[A-Za-z0-9_-]{20,}/g)!.sort((a, b) => b.length - a.length)[0]!;
    secrets.push(linkSecret, link.url);
    await ok('settings', 'set', 'audit-retention-days', '30');
    await ok('token', 'revoke', String(token.id));
    await ok('team', 'remove-member', '--team', 'Ops', '--email', 'bob@example.test');

    const ops = await log('Ops');
    const users = Object.fromEntries((await db.selectFrom('users').select(['id', 'email']).execute()).map((u) => [u.email, u.id]));
    expect(ops.map((e) => e.operation)).toEqual(['remove_team_member', 'revoke_token', 'create_token', 'add_team_member', 'create_team']);
    for (const e of ops) expect(e).toMatchObject({ door: 'cli', token_id: null, oauth_client_id: null, source_ip: null, result: 'ok', started_uuid: null });
    const [removed, revoked, created, added, made] = ops;
    expect(made).toMatchObject({ user_id: users['alice@example.test'], status: 201, targets: [`team:${team.id}`], arguments: { name: 'Ops', owner: 'alice@example.test' } });
    expect(added).toMatchObject({ user_id: users['bob@example.test'], arguments: { team: 'Ops', email: 'bob@example.test', role: 'member' } });
    expect(created).toMatchObject({
      user_id: users['bob@example.test'],
      status: 201,
      targets: [`token:${token.id}`],
      arguments: { team: 'Ops', name: 'ci', permissions: ['read', 'write'], expires: '30d' },
    });
    expect(revoked).toMatchObject({ user_id: users['bob@example.test'], targets: [`token:${token.id}`], arguments: { id: String(token.id) } });
    expect(removed).toMatchObject({ user_id: users['bob@example.test'], targets: [`team:${team.id}`, `user:${users['bob@example.test']}`] });

    // Instance-wide changes are the root team's: the instance's creation, users, sign-in links, settings.
    const root = await log(String(rootTeamId));
    expect(root.map((e) => e.operation)).toEqual(['update_settings', 'issue_login_link', 'create_user', 'create_user', 'init_instance']);
    expect(root[0]).toMatchObject({ user_id: null, arguments: { audit_retention_days: 30 }, result: 'ok' });
    expect(root[1]).toMatchObject({ user_id: users['alice@example.test'], arguments: { email: 'alice@example.test' } });
    expect(root[4]).toMatchObject({ user_id: users['root@example.test'], status: 201, arguments: { email: 'Root@Example.test', team: 'Root Team', api_enabled: true } });

    // As an operator reads it: no token, nobody's address.
    const human = await ok('audit', '--team', 'Ops');
    expect(human).toMatch(/create_team\tok 201\tcli\talice@example.test\t/);
    expect(human).not.toMatch(/token null/);

    const stored = JSON.stringify(await db.selectFrom('audit_log').selectAll().execute());
    for (const s of secrets) expect(stored).not.toContain(s);
  });

  it('records a refused change with its reason, and nothing for a read', async () => {
    const before = Number(
      (
        await db
          .selectFrom('audit_log')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    const dup = await berth('team', 'create', '--name', 'Ops', '--owner', 'alice@example.test');
    expect(dup.code).toBe(1);
    const bad = await berth('token', 'create', '--email', 'alice@example.test', '--team', 'Ops', '--name', 'x', '--permissions', 'sudo', '--expires', '7d');
    expect(bad.code).toBe(1);
    const gone = await berth('token', 'revoke', '999999');
    expect(gone.code).toBe(1);
    await ok('token', 'list', '--team', 'Ops');
    await ok('settings', 'get');

    const after = await db.selectFrom('audit_log').selectAll().orderBy('id').execute();
    expect(after.length).toBe(before + 3);
    const [d, b, g] = after.slice(-3);
    const ops = (await db.selectFrom('teams').select('id').where('name', '=', 'Ops').executeTakeFirstOrThrow()).id;
    // A team create concerns no existing team: the instance's log.
    expect(d).toMatchObject({ operation: 'create_team', team_id: rootTeamId, result: 'conflict', status: 409, door: 'cli' });
    expect(b).toMatchObject({ operation: 'create_token', team_id: ops, result: 'validation', status: 422 });
    // No such token: the instance's own log.
    expect(g).toMatchObject({ operation: 'revoke_token', team_id: rootTeamId, result: 'not_found', status: 404 });
  });
});
