import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startServer } from '../../src/serve.js';
import { openStore } from '../../src/store/db.js';
import { call, tempDir, type Reply } from '../helpers/server.js';
import { cleanEnv, runBerth, type Run } from '../helpers/cli-run.js';
import { storeEnv, storeUrlFor, TEST_STORE } from '../helpers/store.js';

/**
 * The built `berth` command (dist/bundle/cli.js, built by `npm run build` before the tests), run as a
 * real child process over temporary data directories.
 */

const CLI = fileURLToPath(new URL('../../dist/bundle/cli.js', import.meta.url));
const DAY = 86_400_000;
const TOKEN_LINE = /^(\d+)\|([A-Za-z0-9]{40,})$/m;
/** Each CLI run is a fresh Node process (~0.3 s here); tests that make many get room on slow machines. */
const MANY_RUNS = { timeout: 60_000 };

/** The store of the data directory a run names (--data, BERTH_DATA or ./.berth), on PostgreSQL runs. */
function storeEnvOf(args: string[], runCwd: string, env: Record<string, string> = {}): Record<string, string> {
  const i = args.indexOf('--data');
  const dir = i >= 0 ? args[i + 1]! : (env.BERTH_DATA ?? './.berth');
  return storeEnv(path.resolve(runCwd, dir));
}

/** Where commands run, so that a default ./.berth could never land in the repository. */
let cwd: string;
const dirs: string[] = [];
function freshDir(): string {
  const d = tempDir('berth-cli-');
  dirs.push(d);
  return d;
}

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` before these tests`);
  cwd = freshDir();
});
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function berth(args: string[], opts: { env?: Record<string, string>; cwd?: string } = {}): Promise<Run> {
  const runCwd = opts.cwd ?? cwd;
  return runBerth(args, { cwd: runCwd, env: { ...storeEnvOf(args, runCwd, opts.env), ...opts.env } });
}

/** `berth ... --data dir`, expecting success; returns stdout. */
async function ok(dir: string, ...args: string[]): Promise<string> {
  const r = await berth([...args, '--data', dir]);
  expect(r.stderr, `berth ${args.join(' ')}`).toBe('');
  expect(r.code, `berth ${args.join(' ')}`).toBe(0);
  return r.stdout;
}

async function okJson(dir: string, ...args: string[]): Promise<any> {
  const out = await ok(dir, ...args, '--json');
  expect(out.endsWith('\n')).toBe(true);
  expect(out.trim().split('\n')).toHaveLength(1);
  return JSON.parse(out);
}

/** A refused command: non-zero exit, nothing on stdout, exactly one line on stderr. */
async function refused(dir: string, ...args: string[]): Promise<string> {
  const r = await berth([...args, '--data', dir]);
  const what = `berth ${args.join(' ')}`;
  expect(r.code, what).not.toBe(0);
  expect(r.code, what).not.toBeNull();
  expect(r.stdout, what).toBe('');
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  expect(lines, what).toHaveLength(1);
  expect(r.stderr.endsWith('\n'), what).toBe(true);
  return lines[0]!;
}

/** Every row of every table: "nothing changed" means this is deep-equal before and after. */
async function snapshot(dir: string) {
  const db = await openStore(dir, storeUrlFor(dir));
  try {
    return {
      settings: await db.selectFrom('settings').selectAll().orderBy('key').execute(),
      users: await db.selectFrom('users').selectAll().orderBy('id').execute(),
      teams: await db.selectFrom('teams').selectAll().orderBy('id').execute(),
      team_members: await db.selectFrom('team_members').selectAll().orderBy('team_id').orderBy('user_id').execute(),
      api_tokens: await db.selectFrom('api_tokens').selectAll().orderBy('id').execute(),
    };
  } finally {
    await db.destroy();
  }
}

/** One real request against a server started in-process over the same data directory. */
async function viaServer(dir: string, method: string, url: string, token: string): Promise<Reply> {
  const server = await startServer(loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: dir, databaseUrl: storeUrlFor(dir), host: '127.0.0.1', port: 0 }), () => {});
  try {
    return await call(server.url, method, url, { token });
  } finally {
    await server.close();
  }
}
const currentTeam = (dir: string, token: string) => viaServer(dir, 'GET', '/api/v1/teams/current', token);

const secretOf = (token: string) => token.split('|')[1]!;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('berth init', MANY_RUNS, () => {
  it('--json prints exactly the team, the owner and a root token that works', async () => {
    const dir = freshDir();
    const out = await ok(dir, 'init', '--json');
    expect(out.trim().split('\n')).toHaveLength(1);
    const r = JSON.parse(out);
    expect(Object.keys(r).sort()).toEqual(['team', 'token', 'user']);
    expect(Object.keys(r.team).sort()).toEqual(['id', 'name']);
    expect(Object.keys(r.user).sort()).toEqual(['email', 'id']);
    expect(r.team).toEqual({ id: expect.any(Number), name: expect.any(String) });
    expect(r.user).toEqual({ id: expect.any(Number), email: expect.stringContaining('@') });
    const m = TOKEN_LINE.exec(r.token);
    expect(m, r.token).not.toBeNull();
    expect(m![2]!.length).toBeGreaterThanOrEqual(40);

    // Only the hash of the secret is stored; the token is a root token of the new team.
    const snap = await snapshot(dir);
    expect(snap.api_tokens).toHaveLength(1);
    const row = snap.api_tokens[0]!;
    expect(row.id).toBe(Number(m![1]));
    expect(row.token_hash).toBe(sha256(m![2]!));
    expect(JSON.stringify(snap)).not.toContain(m![2]!);
    expect(JSON.parse(row.permissions)).toEqual(['root']);
    expect(row.expires_at).toBeNull();

    const res = await currentTeam(dir, r.token);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: r.team.id, name: r.team.name });
  });

  it('takes --email and --team, and without --json prints the token once for a person', async () => {
    const dir = freshDir();
    const out = await ok(dir, 'init', '--email', 'Ops@Example.test', '--team', 'Ops');
    const tokens = out.match(new RegExp(TOKEN_LINE.source, 'gm')) ?? [];
    expect(tokens).toHaveLength(1);
    expect(out).toContain('Ops');
    const snap = await snapshot(dir);
    expect(snap.users.map((u) => u.email)).toEqual(['ops@example.test']);
    expect(snap.teams.map((t) => t.name)).toEqual(['Ops']);
    expect(snap.team_members).toMatchObject([{ user_id: snap.users[0]!.id, team_id: snap.teams[0]!.id, role: 'owner' }]);
  });

  it('a second init fails with one line and changes nothing; the first token still works', async () => {
    const dir = freshDir();
    const first = await okJson(dir, 'init');
    const before = await snapshot(dir);
    for (const args of [
      ['init', '--json'],
      ['init', '--email', 'other@example.test', '--team', 'Other'],
    ]) {
      const line = await refused(dir, ...args);
      expect(line).toMatch(/already/i);
    }
    expect(await snapshot(dir)).toEqual(before);
    const res = await currentTeam(dir, first.token);
    expect(res.status).toBe(200);
    expect(res.json.id).toBe(first.team.id);
  });

  it('a bad --email is refused before anything is written, and init then works', async () => {
    const dir = freshDir();
    const line = await refused(dir, 'init', '--email', 'not-an-email');
    expect(line).toMatch(/email/i);
    const snap = await snapshot(dir);
    expect(snap.users).toEqual([]);
    expect(snap.teams).toEqual([]);
    expect(snap.api_tokens).toEqual([]);
    expect(snap.settings.find((s) => s.key === 'root_team_id')).toBeUndefined();
    await okJson(dir, 'init');
  });

  it('--api-disabled starts with the API off', async () => {
    const dir = freshDir();
    const r = await okJson(dir, 'init', '--api-disabled');
    expect(await okJson(dir, 'settings', 'get')).toMatchObject({ api_enabled: false });
    const res = await currentTeam(dir, r.token);
    expect(res.status).toBe(403);
    expect(res.text).toBe('{"message":"API is disabled."}');
  });
});

describe('users, teams, memberships and tokens', MANY_RUNS, () => {
  let dir: string;
  let root: { team: { id: number; name: string }; user: { id: number; email: string }; token: string };
  beforeAll(async () => {
    dir = freshDir();
    root = await okJson(dir, 'init', '--email', 'root@example.test');
    await okJson(dir, 'user', 'create', '--email', 'member@example.test');
    await okJson(dir, 'user', 'create', '--email', 'admin@example.test');
    await okJson(dir, 'team', 'add-member', '--team', 'Root Team', '--email', 'member@example.test', '--role', 'member');
    await okJson(dir, 'team', 'add-member', '--team', String(root.team.id), '--email', 'admin@example.test', '--role', 'admin');
  }, 60_000);

  it('user create stores the user (e-mail lower-cased) and refuses a duplicate or a bad e-mail', async () => {
    const u = await okJson(dir, 'user', 'create', '--email', 'Dana@Example.test', '--name', 'Dana D');
    expect(u).toEqual({ id: expect.any(Number), email: 'dana@example.test', name: 'Dana D' });
    const before = await snapshot(dir);
    expect(await refused(dir, 'user', 'create', '--email', 'dana@example.test')).toMatch(/exists/i);
    expect(await refused(dir, 'user', 'create', '--email', 'not-an-email')).toMatch(/email/i);
    expect(await refused(dir, 'user', 'create', '--email', '')).toBeTruthy();
    expect(await snapshot(dir)).toEqual(before);
  });

  it('team create makes the owner an owner; unknown owner or a taken name is refused', async () => {
    await okJson(dir, 'user', 'create', '--email', 'blue-owner@example.test');
    const t = await okJson(dir, 'team', 'create', '--name', 'Blue', '--owner', 'blue-owner@example.test');
    expect(t).toEqual({ id: expect.any(Number), name: 'Blue' });
    const snap = await snapshot(dir);
    const owner = snap.users.find((u) => u.email === 'blue-owner@example.test')!;
    expect(snap.team_members.filter((m) => m.team_id === t.id)).toMatchObject([{ user_id: owner.id, role: 'owner' }]);

    expect(await refused(dir, 'team', 'create', '--name', 'Blue', '--owner', 'blue-owner@example.test')).toMatch(/already exists/i);
    expect(await refused(dir, 'team', 'create', '--name', 'Green', '--owner', 'nobody@example.test')).toMatch(/nobody@example\.test/);
    expect(await refused(dir, 'team', 'create', '--name', 'Green', '--owner', 'not-an-email')).toMatch(/owner/i);
    expect(await snapshot(dir)).toEqual(snap);
  });

  it('team add-member takes a team id or name, changes a role, and refuses an unknown team, user or role', async () => {
    await okJson(dir, 'user', 'create', '--email', 'erin@example.test');
    const red = await okJson(dir, 'team', 'create', '--name', 'Red Team', '--owner', 'root@example.test');
    const byName = await okJson(dir, 'team', 'add-member', '--team', 'Red Team', '--email', 'erin@example.test', '--role', 'member');
    expect(byName).toMatchObject({ team: { id: red.id, name: 'Red Team' }, user: { email: 'erin@example.test' }, role: 'member' });
    const byId = await okJson(dir, 'team', 'add-member', '--team', String(red.id), '--email', 'erin@example.test', '--role', 'admin');
    expect(byId.role).toBe('admin');
    const snap = await snapshot(dir);
    const erin = snap.users.find((u) => u.email === 'erin@example.test')!;
    expect(snap.team_members.filter((m) => m.user_id === erin.id)).toMatchObject([{ team_id: red.id, role: 'admin' }]);

    expect(await refused(dir, 'team', 'add-member', '--team', 'No Such Team', '--email', 'erin@example.test', '--role', 'member')).toMatch(/No Such Team/);
    expect(await refused(dir, 'team', 'add-member', '--team', '99999', '--email', 'erin@example.test', '--role', 'member')).toMatch(/team/i);
    expect(await refused(dir, 'team', 'add-member', '--team', 'Red Team', '--email', 'ghost@example.test', '--role', 'member')).toMatch(/ghost/);
    expect(await refused(dir, 'team', 'add-member', '--team', 'Red Team', '--email', 'erin@example.test', '--role', 'superuser')).toMatch(/role/i);
    // The last owner keeps the role (issue 22): no team is left without an owner.
    expect(await refused(dir, 'team', 'add-member', '--team', 'Red Team', '--email', 'root@example.test', '--role', 'member')).toMatch(/at least one owner/);
    expect(await snapshot(dir)).toEqual(snap);
  });

  it('token create --json prints id, token and expires_at once; only the hash is stored; the token works for its team', async () => {
    const started = Date.now();
    const t = await okJson(dir, 'token', 'create', '--email', 'member@example.test', '--team', 'Root Team', '--name', 'ci', '--permissions', 'read,write', '--expires', '7d');
    expect(Object.keys(t).sort()).toEqual(['expires_at', 'id', 'token']);
    const m = TOKEN_LINE.exec(t.token)!;
    expect(m).not.toBeNull();
    expect(Number(m[1])).toBe(t.id);
    expect(m[2]!.length).toBeGreaterThanOrEqual(40);
    expect(Math.abs(Date.parse(t.expires_at) - (started + 7 * DAY))).toBeLessThan(60_000);

    const snap = await snapshot(dir);
    const row = snap.api_tokens.find((r) => r.id === t.id)!;
    expect(row).toMatchObject({ name: 'ci', team_id: root.team.id, expires_at: t.expires_at, token_hash: sha256(m[2]!) });
    expect(JSON.parse(row.permissions).sort()).toEqual(['read', 'write']);
    expect(JSON.stringify(snap)).not.toContain(m[2]!);

    const res = await currentTeam(dir, t.token);
    expect(res.status).toBe(200);
    expect(res.json.id).toBe(root.team.id);
  });

  it('each expiry choice sets expires_at accordingly; never is null', async () => {
    const days: Record<string, number | null> = { '7d': 7, '30d': 30, '60d': 60, '90d': 90, '1y': 365, never: null };
    for (const [choice, n] of Object.entries(days)) {
      const started = Date.now();
      const t = await okJson(dir, 'token', 'create', '--email', 'member@example.test', '--team', String(root.team.id), '--name', `exp-${choice}`, '--permissions', 'read', '--expires', choice);
      if (n === null) expect(t.expires_at, choice).toBeNull();
      else expect(Math.abs(Date.parse(t.expires_at) - (started + n * DAY)), choice).toBeLessThan(60_000);
    }
  });

  it('a token for a team created with --team NAME is bound to that team', async () => {
    await okJson(dir, 'user', 'create', '--email', 'violet-owner@example.test');
    const violet = await okJson(dir, 'team', 'create', '--name', 'Violet', '--owner', 'violet-owner@example.test');
    const t = await okJson(dir, 'token', 'create', '--email', 'violet-owner@example.test', '--team', 'Violet', '--name', 'v', '--permissions', 'read', '--expires', '30d');
    const res = await currentTeam(dir, t.token);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: violet.id, name: 'Violet' });
  });

  it('root may be granted to an owner or admin, never to a plain member', async () => {
    const before = await snapshot(dir);
    const line = await refused(dir, 'token', 'create', '--email', 'member@example.test', '--team', 'Root Team', '--name', 'x', '--permissions', 'root', '--expires', '7d');
    expect(line).toMatch(/root/);
    await refused(dir, 'token', 'create', '--email', 'member@example.test', '--team', 'Root Team', '--name', 'x', '--permissions', 'read,root', '--expires', 'never');
    expect(await snapshot(dir)).toEqual(before);

    const t = await okJson(dir, 'token', 'create', '--email', 'admin@example.test', '--team', 'Root Team', '--name', 'adm', '--permissions', 'root', '--expires', '7d');
    expect(JSON.parse((await snapshot(dir)).api_tokens.find((r) => r.id === t.id)!.permissions)).toEqual(['root']);
  });

  it('bad arguments exit non-zero with one line and write no row', async () => {
    const base = { email: 'member@example.test', team: 'Root Team', name: 'bad', permissions: 'read', expires: '7d' };
    const create = (o: Partial<typeof base>) => {
      const a = { ...base, ...o };
      return refused(dir, 'token', 'create', '--email', a.email, '--team', a.team, '--name', a.name, '--permissions', a.permissions, '--expires', a.expires);
    };
    const before = await snapshot(dir);
    expect(await create({ permissions: 'read,admin' })).toMatch(/admin/);
    expect(await create({ permissions: 'READ' })).toMatch(/permission/i);
    expect(await create({ permissions: ',' })).toMatch(/permission/i);
    expect(await create({ expires: '8d' })).toMatch(/expires/);
    expect(await create({ expires: '7' })).toMatch(/expires/);
    expect(await create({ email: 'not-an-email' })).toMatch(/email/i);
    expect(await create({ email: 'ghost@example.test' })).toMatch(/ghost@example\.test/);
    expect(await create({ team: 'No Such Team' })).toMatch(/No Such Team/);
    expect(await create({ email: 'blue-owner@example.test', team: 'Root Team' })).toMatch(/not a member/);
    expect(await create({ name: '' })).toMatch(/name/i);
    // A missing required option is one line too.
    expect(await refused(dir, 'token', 'create', '--email', 'member@example.test', '--team', 'Root Team', '--name', 'x', '--permissions', 'read')).toMatch(/--expires/);
    expect(await refused(dir, 'token', 'frobnicate')).toMatch(/frobnicate/);
    expect(await snapshot(dir)).toEqual(before);
  });

  it('token list never prints a secret or a hash, in either format', async () => {
    const extra = await okJson(dir, 'token', 'create', '--email', 'member@example.test', '--team', 'Root Team', '--name', 'listed', '--permissions', 'deploy', '--expires', '90d');
    const snap = await snapshot(dir);
    const rootTeamTokens = snap.api_tokens.filter((t) => t.team_id === root.team.id);
    const human = await ok(dir, 'token', 'list', '--team', 'Root Team');
    const json = await okJson(dir, 'token', 'list', '--team', String(root.team.id));

    expect(json.map((t: { id: number }) => t.id)).toEqual(rootTeamTokens.map((t) => t.id));
    expect(json.find((t: { id: number }) => t.id === extra.id)).toMatchObject({ name: 'listed', email: 'member@example.test', permissions: ['deploy'] });
    for (const t of json) {
      expect(Object.keys(t)).not.toContain('token');
      expect(Object.keys(t)).not.toContain('token_hash');
      expect(Object.keys(t)).not.toContain('secret');
    }
    expect(human).toContain('listed');
    for (const out of [human, JSON.stringify(json)]) {
      for (const t of snap.api_tokens) expect(out).not.toContain(t.token_hash);
      for (const secret of [secretOf(root.token), secretOf(extra.token)]) expect(out).not.toContain(secret);
      expect(out).not.toMatch(/[A-Za-z0-9]{40,}/);
    }
    expect(await refused(dir, 'token', 'list', '--team', 'No Such Team')).toMatch(/No Such Team/);
  });

  it('token revoke deletes the token and it stops working at once', async () => {
    const t = await okJson(dir, 'token', 'create', '--email', 'member@example.test', '--team', 'Root Team', '--name', 'doomed', '--permissions', 'read', '--expires', '30d');
    expect((await currentTeam(dir, t.token)).status).toBe(200);
    await ok(dir, 'token', 'revoke', String(t.id));
    expect((await snapshot(dir)).api_tokens.some((r) => r.id === t.id)).toBe(false);
    const res = await currentTeam(dir, t.token);
    expect(res.status).toBe(401);
    expect(res.text).toBe('{"message":"Invalid token."}');

    const before = await snapshot(dir);
    await refused(dir, 'token', 'revoke', String(t.id));
    await refused(dir, 'token', 'revoke', 'abc');
    await refused(dir, 'token', 'revoke', '-1');
    expect(await snapshot(dir)).toEqual(before);
  });
});

describe('berth settings', MANY_RUNS, () => {
  let dir: string;
  let rootToken: string;
  beforeAll(async () => {
    dir = freshDir();
    rootToken = (await okJson(dir, 'init')).token;
  });

  it('get shows the defaults after init', async () => {
    const s = await okJson(dir, 'settings', 'get');
    expect(s).toEqual({ api_enabled: true, mcp_enabled: true, allowed_ips: '', root_team_id: expect.any(Number), audit_retention_days: 90 });
    const human = await ok(dir, 'settings', 'get');
    expect(human).toMatch(/api-enabled: true/);
  });

  it('set api-enabled false turns the API off (403 API is disabled.), true turns it on; other values are refused', async () => {
    expect(await okJson(dir, 'settings', 'set', 'api-enabled', 'false')).toMatchObject({ api_enabled: false });
    expect(await okJson(dir, 'settings', 'get')).toMatchObject({ api_enabled: false });
    const off = await currentTeam(dir, rootToken);
    expect(off.status).toBe(403);
    expect(off.text).toBe('{"message":"API is disabled."}');

    const before = await snapshot(dir);
    expect(await refused(dir, 'settings', 'set', 'api-enabled', 'yes')).toMatch(/api-enabled/);
    expect(await refused(dir, 'settings', 'set', 'no-such-setting', 'x')).toMatch(/no-such-setting/);
    expect(await snapshot(dir)).toEqual(before);

    expect(await okJson(dir, 'settings', 'set', 'api-enabled', 'true')).toMatchObject({ api_enabled: true });
    expect((await currentTeam(dir, rootToken)).status).toBe(200);
  });

  it('set mcp-enabled false/true flips the MCP toggle only; other values are refused', async () => {
    expect(await okJson(dir, 'settings', 'set', 'mcp-enabled', 'false')).toMatchObject({ api_enabled: true, mcp_enabled: false });
    expect(await refused(dir, 'settings', 'set', 'mcp-enabled', 'off')).toMatch(/mcp-enabled/);
    expect(await okJson(dir, 'settings', 'set', 'mcp-enabled', 'true')).toMatchObject({ mcp_enabled: true });
  });

  it('set allowed-ips stores the normalized list; an invalid list is refused and changes nothing', async () => {
    const r = await okJson(dir, 'settings', 'set', 'allowed-ips', '10.0.0.0/8, 10.1.2.3, ::1');
    expect(r.allowed_ips).toBe('10.0.0.0/8,::1');
    expect((await okJson(dir, 'settings', 'get')).allowed_ips).toBe('10.0.0.0/8,::1');
    // 127.0.0.1 is not on the list any more: the API refuses this client.
    const denied = await currentTeam(dir, rootToken);
    expect(denied.status).toBe(403);
    expect(denied.text).toBe('{"message":"You are not allowed to access the API."}');

    const before = await snapshot(dir);
    for (const bad of ['10.0.0.0/33', 'not-an-ip', '10.0.0.1, 300.1.1.1']) {
      expect(await refused(dir, 'settings', 'set', 'allowed-ips', bad)).toMatch(/allowed-ips/);
    }
    expect(await snapshot(dir)).toEqual(before);

    expect((await okJson(dir, 'settings', 'set', 'allowed-ips', '')).allowed_ips).toBe('');
    expect((await currentTeam(dir, rootToken)).status).toBe(200);
  });
});

describe('berth login-link', MANY_RUNS, () => {
  let dir: string;
  beforeAll(async () => {
    dir = freshDir();
    await okJson(dir, 'init', '--email', 'root@example.test');
  });
  const link = (args: string[], env: Record<string, string> = {}) => berth(['login-link', '--email', 'root@example.test', '--data', dir, ...args], { env });

  it('points at the address serve was given, and says on stderr where that address came from', async () => {
    const cases: Array<[string[], Record<string, string>, RegExp, string]> = [
      [[], {}, /^http:\/\/localhost:8000\/login\/link\?token=/, 'the default port 8000'],
      [['--port', '47100'], {}, /^http:\/\/localhost:47100\/login\/link\?token=/, '--port 47100'],
      [[], { PORT: '47100' }, /^http:\/\/localhost:47100\/login\/link\?token=/, 'PORT 47100'],
      [['--url', 'https://berth.example.com/'], { PORT: '47100' }, /^https:\/\/berth\.example\.com\/login\/link\?token=/, '--url'],
      [[], { BERTH_PUBLIC_URL: 'https://ops.example.com' }, /^https:\/\/ops\.example\.com\/login\/link\?token=/, 'BERTH_PUBLIC_URL'],
    ];
    for (const [args, env, url, from] of cases) {
      const r = await link(args, env);
      expect(r.code, args.join(' ')).toBe(0);
      // stdout is the link alone, for $(berth login-link …).
      expect(r.stdout.trim().split('\n')).toHaveLength(1);
      expect(r.stdout.trim()).toMatch(url);
      expect(r.stderr).toContain(`address from ${from}`);
    }
    const json = JSON.parse((await link(['--port', '47100', '--json'])).stdout);
    expect(json).toMatchObject({ url: expect.stringMatching(/^http:\/\/localhost:47100\//), url_from: '--port 47100' });
  });

  it('a bad --url is refused with one line', async () => {
    const r = await link(['--url', 'not a url']);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('BERTH_DATA', MANY_RUNS, () => {
  it('names the data directory when --data is not given; --data wins over it', async () => {
    const dir = freshDir();
    const elsewhere = freshDir();
    const env = { BERTH_DATA: dir };
    const init = await berth(['init', '--json'], { env, cwd: elsewhere });
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const r = JSON.parse(init.stdout);
    // On PostgreSQL the store is the database (DATABASE_URL); the snapshot below reads it either way.
    expect(fs.existsSync(path.join(dir, 'berth.sqlite'))).toBe(TEST_STORE === 'sqlite');
    expect(fs.existsSync(path.join(elsewhere, '.berth'))).toBe(false);

    const get = await berth(['settings', 'get', '--json'], { env, cwd: elsewhere });
    expect(JSON.parse(get.stdout)).toMatchObject({ root_team_id: r.team.id });
    const create = await berth(['user', 'create', '--email', 'via-env@example.test', '--json'], { env, cwd: elsewhere });
    expect(create.code).toBe(0);
    expect((await snapshot(dir)).users.map((u) => u.email)).toContain('via-env@example.test');

    // --data wins: an empty directory named by it is refused (no instance there), though BERTH_DATA holds one.
    const other = freshDir();
    const overridden = await berth(['settings', 'get', '--json', '--data', other], { env, cwd: elsewhere });
    expect(overridden.code).not.toBe(0);
    expect(overridden.stderr).toMatch(/^berth: no berth instance in /);
    expect(fs.readdirSync(other)).toEqual([]);
  });
});

/** A running `berth serve` child with its stdout collected. */
class Served {
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (this.stdout += c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (this.stderr += c));
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  static start(dir: string, port = '0'): Served {
    return new Served(spawn(process.execPath, [CLI, 'serve', '--port', port, '--data', dir], { cwd, env: cleanEnv({ LOG_LEVEL: 'info', ...storeEnv(dir) }), stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  async url(): Promise<string> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const m = /^berth: listening on (http:\/\/\S+)$/m.exec(this.stdout);
      if (m) return m[1]!;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`berth serve did not report its URL.\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop() {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }
}

describe('berth serve', () => {
  const running: Served[] = [];
  afterAll(async () => {
    for (const s of running) if (s.child.exitCode === null) s.child.kill('SIGKILL');
  });

  it('first start of an empty directory prints the root token once; it works; SIGTERM exits 0; logs hold no other secret', { timeout: 60_000 }, async () => {
    const dir = freshDir();
    const first = Served.start(dir);
    running.push(first);
    const url = await first.url();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const printed = first.stdout.match(new RegExp(TOKEN_LINE.source, 'gm')) ?? [];
    expect(printed).toHaveLength(1);
    const rootToken = printed[0]!;

    const current = await call(url, 'GET', '/api/v1/teams/current', { token: rootToken });
    expect(current.status).toBe(200);
    expect(current.json).toMatchObject({ name: 'Root Team' });

    // A second token, made with the CLI while the server runs, used in requests that succeed and fail.
    const made = await okJson(dir, 'token', 'create', '--email', 'admin@localhost.localdomain', '--team', 'Root Team', '--name', 'agent', '--permissions', 'read', '--expires', '30d');
    const [id, secret] = made.token.split('|') as [string, string];
    const wrongSecret = 'Q'.repeat(secret.length);
    expect((await call(url, 'GET', '/api/v1/teams/current', { token: made.token })).status).toBe(200);
    expect((await call(url, 'GET', '/api/v1/teams', { token: made.token })).status).toBe(200);
    expect((await call(url, 'POST', '/api/v1/disable', { token: made.token })).status).toBe(403);
    expect((await call(url, 'GET', '/api/v1/nope', { token: made.token })).status).toBe(404);
    expect((await call(url, 'GET', '/api/v1/teams/current', { token: `${id}|${wrongSecret}` })).status).toBe(401);
    expect((await call(url, 'POST', '/api/feedback', { token: made.token, body: { content: 'short' } })).status).toBe(422);
    expect((await call(url, 'GET', '/api/v1/teams/current', { token: made.token, headers: { cookie: `session=${secret}` } })).status).toBe(200);

    const exit = await first.stop();
    expect(exit).toEqual({ code: 0, signal: null });

    // The request logs are on stdout (so the check below looks at real log lines)...
    expect(first.stdout).toContain('/api/v1/teams/current');
    // ...and no secret ever reaches them; the root token appears only where it was printed once.
    expect(first.stdout).not.toContain(secret);
    expect(first.stdout).not.toContain(wrongSecret);
    expect(first.stdout.split(secretOf(rootToken)).length - 1).toBe(1);
    expect(first.stderr).not.toContain(secret);
    expect(first.stderr).not.toContain(secretOf(rootToken));
    // No runtime or framework warnings at start or on the way.
    expect(first.stderr).not.toMatch(/warning|deprecat/i);
    // One line per request, carrying its request id.
    const line = first.stdout.split('\n').find((l) => l.includes('"url":"/api/v1/teams/current"'));
    expect(JSON.parse(line!)).toMatchObject({ msg: 'request', method: 'GET', status: 200, reqId: expect.any(String) });

    // A second start on the same directory creates nothing and prints no token.
    const second = Served.start(dir);
    running.push(second);
    const url2 = await second.url();
    expect(second.stdout).not.toMatch(TOKEN_LINE);
    expect(second.stdout).not.toMatch(/root token/i);
    expect(second.stdout).not.toContain(secretOf(rootToken));
    const again = await call(url2, 'GET', '/api/v1/teams/current', { token: rootToken });
    expect(again.status).toBe(200);
    expect(await second.stop()).toEqual({ code: 0, signal: null });
    expect((await snapshot(dir)).teams).toHaveLength(1);
  });
});

describe('berth serve: a first start', () => {
  const running: Served[] = [];
  afterAll(async () => {
    for (const s of running) if (s.child.exitCode === null) s.child.kill('SIGKILL');
  });

  it('on a busy port fails before creating the instance: no root token printed, none made; then it starts, audited as init', { timeout: 60_000 }, async () => {
    const dir = freshDir();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = String((taken.address() as net.AddressInfo).port);
    try {
      const busy = Served.start(dir, port);
      running.push(busy);
      expect((await busy.exited).code).toBe(1);
      expect(busy.stdout).not.toMatch(TOKEN_LINE);
      expect(busy.stdout).not.toMatch(/root token|created a new instance/i);
      expect(busy.stderr.trim()).toBe(`berth: 127.0.0.1:${port} is already in use (another berth serve?); nothing was created: stop it or choose another --port`);
      // No instance: every other command still says so.
      expect(await refused(dir, 'token', 'list', '--team', '1')).toMatch(/no berth instance/);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }

    // The port is free now: the same first start creates the instance, prints its token once,
    // and leaves the entry `berth init` leaves (the cli door: this host, no token, no address).
    const first = Served.start(dir, port);
    running.push(first);
    await first.url();
    const rootToken = (first.stdout.match(new RegExp(TOKEN_LINE.source, 'gm')) ?? [])[0]!;
    expect(rootToken).toBeDefined();
    const log = await okJson(dir, 'audit', '--team', '1');
    const owner = (await snapshot(dir)).users[0]!;
    expect(log.items).toHaveLength(1);
    expect(log.items[0]).toMatchObject({
      operation: 'init_instance',
      door: 'cli',
      user_id: owner.id,
      token_id: null,
      source_ip: null,
      result: 'ok',
      status: 201,
      targets: ['team:1', `user:${owner.id}`],
      arguments: { team: 'Root Team', api_enabled: true },
    });
    expect(JSON.stringify(log)).not.toContain(secretOf(rootToken));
    expect(await first.stop()).toEqual({ code: 0, signal: null });
  });
});

describe('a running server and another process writing the same store', MANY_RUNS, () => {
  // The server reuses token and team rows while the store is unchanged; a commit by another
  // process (the CLI here) must be seen by the very next request, never one later.
  let dir: string;
  let root: { token: string };
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    dir = freshDir();
    root = await okJson(dir, 'init');
    server = await startServer(loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: dir, databaseUrl: storeUrlFor(dir), host: '127.0.0.1', port: 0 }), () => {});
  });
  afterAll(() => server.close());
  const get = (token: string) => call(server.url, 'GET', '/api/v1/teams/current', { token });

  it('a token revoked by the CLI fails on the next request', async () => {
    const t = await okJson(dir, 'token', 'create', '--email', (await snapshot(dir)).users[0]!.email, '--team', 'Root Team', '--name', 'cached', '--permissions', 'read', '--expires', '30d');
    for (let i = 0; i < 3; i++) expect((await get(t.token)).status).toBe(200);
    await ok(dir, 'token', 'revoke', String(t.id));
    const res = await get(t.token);
    expect(res.status).toBe(401);
    expect(res.text).toBe('{"message":"Invalid token."}');
    expect((await get(root.token)).status).toBe(200);
  });

  it('the API disabled by the CLI is refused on the next request, and enabled again at once', async () => {
    expect((await get(root.token)).status).toBe(200);
    await ok(dir, 'settings', 'set', 'api-enabled', 'false');
    expect((await get(root.token)).json).toEqual({ message: 'API is disabled.' });
    await ok(dir, 'settings', 'set', 'api-enabled', 'true');
    expect((await get(root.token)).status).toBe(200);
  });

  it('an allow-list set by the CLI applies on the next request', async () => {
    await ok(dir, 'settings', 'set', 'allowed-ips', '10.9.8.0/24');
    expect((await get(root.token)).status).toBe(403);
    await ok(dir, 'settings', 'set', 'allowed-ips', '');
    expect((await get(root.token)).status).toBe(200);
  });

  it("a member removed by the CLI loses that team's tokens for good: re-added, they do not work again", async () => {
    const email = 'leaver@example.test';
    await ok(dir, 'user', 'create', '--email', email, '--name', 'Leaver');
    await ok(dir, 'team', 'add-member', '--team', 'Root Team', '--email', email, '--role', 'admin');
    const t = await okJson(dir, 'token', 'create', '--email', email, '--team', 'Root Team', '--name', 'leaving', '--permissions', 'root', '--expires', '30d');
    expect((await get(t.token)).status).toBe(200);
    const removed = await ok(dir, 'team', 'remove-member', '--team', 'Root Team', '--email', email);
    expect((await get(t.token)).status).toBe(401);
    await ok(dir, 'team', 'add-member', '--team', 'Root Team', '--email', email, '--role', 'admin');
    expect((await get(t.token)).status).toBe(401);
    expect(await okJson(dir, 'token', 'list', '--team', 'Root Team')).not.toContainEqual(expect.objectContaining({ id: t.id }));
    expect(removed).toContain('(1 token revoked)');
  });
});
