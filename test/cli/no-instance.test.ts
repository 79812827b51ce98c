import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BERTH_VERSION, COOLIFY_API_VERSION } from '../../src/version.js';
import { SERVER_INFO } from '../../src/mcp/server.js';
import { runBerth } from '../helpers/cli-run.js';
import { CLI } from '../helpers/mcp.js';
import { tempDir } from '../helpers/server.js';
import { storeEnv, TEST_STORE } from '../helpers/store.js';

/**
 * A data directory (or PostgreSQL store) that holds no instance is refused by every command but
 * init and serve's first start, with one line, and nothing is created: a mistyped --data or
 * BERTH_DATA must not leave an empty store behind (issue 23).
 */

/** On PostgreSQL, databases without berth's tables: a new DATABASE_URL, which init then migrates from nothing. */
const EMPTY = { empty: true };

const dirs: string[] = [];
function freshDir(): string {
  const d = tempDir('berth-noinst-');
  dirs.push(d);
  return d;
}
let cwd: string;
beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` before these tests`);
  cwd = freshDir();
});
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** The tables of a PostgreSQL store (none for a store nothing has touched). */
function pgTables(url: string): string[] {
  const out = execFileSync('psql', [url, '-qAt', '-c', 'select table_name from information_schema.tables where table_schema = current_schema()'], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

const COMMANDS: string[][] = [
  ['user', 'create', '--email', 'x@example.test'],
  ['team', 'create', '--name', 'T', '--owner', 'x@example.test'],
  ['token', 'create', '--email', 'x@example.test', '--team', '1', '--name', 'n', '--permissions', 'read', '--expires', 'never'],
  ['token', 'list', '--team', '1'],
  ['token', 'revoke', '1'],
  ['settings', 'get'],
  ['settings', 'set', 'api-enabled', 'false'],
  ['mcp'],
  ['mcp-config', '--client', 'cursor'],
  ['login-link', '--email', 'x@example.test'],
];

describe('a store with no instance is refused', { timeout: 120_000 }, () => {
  // The four ways to name it: --data and BERTH_DATA, each relative (to the working directory) and absolute.
  const ways = [
    { name: '--data relative', args: (rel: string) => ['--data', rel], env: () => ({}) },
    { name: '--data absolute', args: (_rel: string, abs: string) => ['--data', abs], env: () => ({}) },
    { name: 'BERTH_DATA relative', args: () => [], env: (rel: string) => ({ BERTH_DATA: rel }) },
    { name: 'BERTH_DATA absolute', args: () => [], env: (_rel: string, abs: string) => ({ BERTH_DATA: abs }) },
  ];
  for (const way of ways) {
    it(`named by ${way.name}: every command but init exits non-zero with one line and creates nothing`, async () => {
      const runIn = freshDir();
      // On PostgreSQL one empty database per way, checked for tables after every command: the same
      // "a new DATABASE_URL" each time (a command that made tables fails the check at once), without
      // a CREATE DATABASE per command.
      const pgEnv = storeEnv(runIn, EMPTY);
      for (const [i, cmd] of COMMANDS.entries()) {
        const rel = `typo-${i}`;
        const abs = path.join(runIn, rel);
        const r = await runBerth([...cmd, ...way.args(rel, abs)], { cwd: runIn, env: { BERTH_TOKEN: '1|x', ...pgEnv, ...way.env(rel, abs) } });
        expect(r.code, `berth ${cmd.join(' ')}`).not.toBe(0);
        expect(r.stdout).toBe('');
        const lines = r.stderr.split('\n').filter(Boolean);
        expect(lines, r.stderr).toHaveLength(1);
        if (TEST_STORE === 'sqlite') {
          expect(lines[0]).toBe(`berth: no berth instance in ${abs}: run \`berth init\` or check --data`);
        } else {
          expect(lines[0]).toBe('berth: no berth instance in the PostgreSQL store (DATABASE_URL): run `berth init` or check DATABASE_URL');
          expect(pgTables(pgEnv.DATABASE_URL!), `berth ${cmd.join(' ')}`).toEqual([]);
        }
        expect(fs.existsSync(abs), `berth ${cmd.join(' ')} created ${abs}`).toBe(false);
      }
      expect(fs.readdirSync(runIn)).toEqual([]);
    });
  }

  it('an existing empty directory stays empty; init then makes the instance and the same commands work', async () => {
    const dir = freshDir();
    const env = storeEnv(dir, EMPTY);
    const refused = await runBerth(['settings', 'get', '--data', dir], { cwd, env });
    expect(refused.code).not.toBe(0);
    expect(fs.readdirSync(dir)).toEqual([]);
    const init = await runBerth(['init', '--json', '--data', dir], { cwd, env });
    expect(init.code, init.stderr).toBe(0);
    const got = await runBerth(['settings', 'get', '--json', '--data', dir], { cwd, env });
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ root_team_id: JSON.parse(init.stdout).team.id });
  });

  it('remote mode (mcp --api-url) needs no local instance and is not refused for it', async () => {
    const dir = path.join(freshDir(), 'none');
    // Without a token remote mode stops at its own check, not at the data directory.
    const r = await runBerth(['mcp', '--api-url', 'http://127.0.0.1:9', '--data', dir], { cwd, env: storeEnv(dir, EMPTY) });
    expect(r.stderr).not.toMatch(/no berth instance/);
    expect(fs.existsSync(dir)).toBe(false);
  });
});

describe("serve's first start", { timeout: 60_000 }, () => {
  it('refuses a directory that holds other files and no instance, and adds nothing to it', async () => {
    if (TEST_STORE === 'postgres') return; // the store is the database there; a directory is never its home
    const dir = freshDir();
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'mine');
    const r = await runBerth(['serve', '--port', '0', '--data', dir], { cwd, env: storeEnv(dir, EMPTY) });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(`berth: ${dir} holds other files and no berth instance: give serve an empty or new directory, or check --data`);
    expect(fs.readdirSync(dir)).toEqual(['notes.txt']);
  });
});

describe('berth --version', () => {
  it("--version, -V, -v and version print berth's version and the Coolify API version it follows", async () => {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8'));
    expect(pkg.version).toBe(BERTH_VERSION);
    expect(SERVER_INFO.version).toBe(BERTH_VERSION);
    for (const args of [['--version'], ['-V'], ['-v'], ['version']]) {
      const r = await runBerth(args, { cwd });
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toBe(`berth ${BERTH_VERSION} (Coolify API ${COOLIFY_API_VERSION})\n`);
    }
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  it('the package has a scoped name this project can own, and its command is still `berth`', () => {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8'));
    expect(pkg.name).toMatch(/^@[a-z0-9-]+\/berth$/);
    expect(pkg.bin).toEqual({ berth: 'dist/bundle/cli.js' });
  });
});
