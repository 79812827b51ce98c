import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBerth } from '../helpers/cli-run.js';
import { CLI } from '../helpers/mcp.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { tempDir } from '../helpers/server.js';
import { storeEnv, storeUrlFor } from '../helpers/store.js';

/**
 * `berth mcp-config`: each client's own format, absolute paths, a token made for it, and a real
 * MCP SDK client started from another working directory with exactly what was printed.
 */

const TOKEN = /^\d+\|[A-Za-z0-9]{40,}$/;
const dirs: string[] = [];
function freshDir(): string {
  const d = tempDir('berth-mcpcfg-');
  dirs.push(d);
  return d;
}

/** Where the instance lives, named relatively from `home` (as a desktop client's `--data .berth` would be). */
let home: string;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` before these tests`);
  home = freshDir();
  dataDir = path.join(home, '.berth');
  env = storeEnv(dataDir);
  const init = await runBerth(['init', '--data', '.berth'], { cwd: home, env });
  expect(init.code, init.stderr).toBe(0);
  const member = await runBerth(['user', 'create', '--email', 'dev@example.test', '--data', '.berth'], { cwd: home, env });
  expect(member.code, member.stderr).toBe(0);
  const team = await runBerth(['team', 'create', '--name', 'Apps', '--owner', 'dev@example.test', '--data', '.berth'], { cwd: home, env });
  expect(team.code, team.stderr).toBe(0);
});
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function mcpConfig(args: string[], cwd = home) {
  // Relative from the instance's home, as a person would type it; absolute from anywhere else.
  return runBerth(['mcp-config', ...args, '--data', cwd === home ? '.berth' : dataDir], { cwd, env });
}

async function auditOf(team: string): Promise<Array<{ operation: string; targets: string[]; [k: string]: unknown }>> {
  const r = await runBerth(['audit', '--team', team, '--json', '--data', dataDir], { cwd: home, env });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).items;
}

async function tokens(team = '1'): Promise<Array<{ id: number; name: string; permissions: string[]; email: string }>> {
  const r = await runBerth(['token', 'list', '--team', team, '--json', '--data', dataDir], { cwd: home, env });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('berth mcp-config (stdio)', { timeout: 120_000 }, () => {
  it("prints each client's own format with absolute paths; a real SDK client started elsewhere with it lists the tools", async () => {
    const expected = {
      'claude-desktop': { key: 'mcpServers', type: undefined },
      // What `claude mcp add-json berth '<json>'` takes: the server object itself, no wrapper.
      'claude-code': { key: undefined, type: 'stdio' },
      cursor: { key: 'mcpServers', type: undefined },
      vscode: { key: 'servers', type: 'stdio' },
      inspector: { key: 'mcpServers', type: 'stdio' },
    } as const;
    for (const [client, shape] of Object.entries(expected)) {
      const r = await mcpConfig(['--client', client]);
      expect(r.code, r.stderr).toBe(0);
      const doc = JSON.parse(r.stdout);
      if (shape.key) expect(Object.keys(doc)).toEqual([shape.key]);
      const entry = shape.key ? doc[shape.key].berth : doc;
      expect(entry.type).toBe(shape.type);
      expect(entry.command).toBe(process.execPath);
      expect(entry.args).toEqual([fs.realpathSync(CLI), 'mcp', '--data', dataDir]);
      expect(entry.env.BERTH_TOKEN).toMatch(TOKEN);
      // The PostgreSQL store travels with it; SQLite needs nothing but --data.
      expect(entry.env.DATABASE_URL).toBe(storeUrlFor(dataDir) ?? undefined);
      // The token is on stdout once; stderr says where it goes, never the secret.
      expect(r.stdout.split(entry.env.BERTH_TOKEN.split('|')[1]).length - 1).toBe(1);
      expect(r.stderr).not.toContain(entry.env.BERTH_TOKEN.split('|')[1]);
    }
    const made = (await tokens()).filter((t) => t.name.startsWith('mcp-config '));
    expect(made.map((t) => t.name).sort()).toEqual(
      Object.keys(expected)
        .map((c) => `mcp-config ${c}`)
        .sort(),
    );
    for (const t of made) {
      expect(t.email).toBe('admin@localhost.localdomain');
      expect(t.permissions.sort()).toEqual(['deploy', 'read', 'write']);
    }

    // A desktop client: another working directory, exactly the printed command, args and env.
    const printed = JSON.parse((await mcpConfig(['--client', 'claude-desktop'])).stdout).mcpServers.berth;
    const elsewhere = freshDir();
    const client = new Client({ name: 'desktop-like', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: printed.command, args: printed.args, env: printed.env, cwd: elsewhere, stderr: 'pipe' }));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('list_resources');
      const team = await client.callTool({ name: 'get_current_team', arguments: {} });
      expect(team.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    expect(fs.readdirSync(elsewhere)).toEqual([]);
  });

  it('--write merges into the file: unrelated entries and keys stay, only berth is replaced; owner-only; atomic', async () => {
    const dir = freshDir();
    const file = path.join(dir, 'mcp.json');
    const other = { command: 'uvx', args: ['something'], env: { KEY: 'v' } };
    fs.writeFileSync(file, JSON.stringify({ inputs: [{ id: 'x' }], servers: { other, berth: { command: 'stale' } } }), { mode: 0o644 });
    const r = await mcpConfig(['--client', 'vscode', '--write', '--config-file', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/wrote the "berth" entry to /);
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(doc.inputs).toEqual([{ id: 'x' }]);
    expect(doc.servers.other).toEqual(other);
    expect(doc.servers.berth).toMatchObject({ type: 'stdio', command: process.execPath, args: [fs.realpathSync(CLI), 'mcp', '--data', dataDir] });
    // The secret is in the file, not on the terminal.
    expect(r.stdout + r.stderr).not.toContain(doc.servers.berth.env.BERTH_TOKEN.split('|')[1]);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir)).toEqual(['mcp.json']);

    // A new file (and its directory) is made; the relative --config-file is the working directory's.
    const fresh = await mcpConfig(['--client', 'cursor', '--write', '--config-file', 'sub/cursor.json'], dir);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(Object.keys(JSON.parse(fs.readFileSync(path.join(dir, 'sub', 'cursor.json'), 'utf8')).mcpServers)).toEqual(['berth']);

    // Claude Code prints the bare server object (for add-json) but its .mcp.json keeps the wrapper.
    const code = await mcpConfig(['--client', 'claude-code', '--write', '--config-file', '.mcp.json'], dir);
    expect(code.code, code.stderr).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(dir, '.mcp.json'), 'utf8')).mcpServers.berth).toMatchObject({ type: 'stdio', command: process.execPath });
  });

  it('a file that cannot be merged is left as it was; the entry is printed for a person to add, and the command fails', async () => {
    const dir = freshDir();
    const file = path.join(dir, 'mcp.json');
    const jsonc = '{\n  // mine\n  "servers": {}\n}\n';
    fs.writeFileSync(file, jsonc);
    const before = (await tokens()).length;
    const r = await mcpConfig(['--client', 'vscode', '--write', '--config-file', file]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(`berth: ${file} is not plain JSON (comments?); nothing was changed: add the entry printed above by hand`);
    expect(fs.readFileSync(file, 'utf8')).toBe(jsonc);
    // What "by hand" needs: the entry, in the file's own shape, with a token made for it (shown once).
    const entry = JSON.parse(r.stdout).servers.berth;
    expect(entry).toMatchObject({ type: 'stdio', command: process.execPath, args: [fs.realpathSync(CLI), 'mcp', '--data', dataDir] });
    expect(entry.env.BERTH_TOKEN).toMatch(TOKEN);
    const after = await tokens();
    expect(after.length).toBe(before + 1);
    expect(after.at(-1)).toMatchObject({ id: Number(entry.env.BERTH_TOKEN.split('|')[0]), name: 'mcp-config vscode' });

    // A file holding something other than an object is refused the same way.
    fs.writeFileSync(file, '[]');
    const list = await mcpConfig(['--client', 'cursor', '--write', '--config-file', file, '--dry-run']);
    expect(list.code).not.toBe(0);
    expect(list.stderr).toContain('does not hold a JSON object; nothing was changed: add the entry printed above by hand');
    expect(JSON.parse(list.stdout).mcpServers.berth.env.BERTH_TOKEN).toBe('<id>|<secret>');
    expect(fs.readFileSync(file, 'utf8')).toBe('[]');
  });

  it('--dry-run prints the entry with a placeholder token and makes nothing; it is refused by the same rules', async () => {
    const before = await tokens();
    const auditBefore = (await auditOf('1')).length;
    for (const client of ['claude-desktop', 'claude-code', 'cursor', 'vscode', 'inspector']) {
      const r = await mcpConfig(['--client', client, '--dry-run']);
      expect(r.code, r.stderr).toBe(0);
      const doc = JSON.parse(r.stdout);
      const entry = client === 'claude-code' ? doc : (doc.servers ?? doc.mcpServers).berth;
      expect(entry.env.BERTH_TOKEN).toBe('<id>|<secret>');
      expect(entry.args).toEqual([fs.realpathSync(CLI), 'mcp', '--data', dataDir]);
      expect(r.stderr).toMatch(/no token made/);
    }
    const http = await mcpConfig(['--client', 'vscode', '--http', 'http://127.0.0.1:8000', '--dry-run']);
    expect(JSON.parse(http.stdout).servers.berth.headers).toEqual({ Authorization: 'Bearer <id>|<secret>' });

    // --write with --dry-run writes nothing (and prints only berth's entry, never the file's others).
    const dir = freshDir();
    const file = path.join(dir, 'mcp.json');
    const mine = JSON.stringify({ servers: { other: { command: 'x', env: { SECRET: 'keep-me-off-stdout' } } } });
    fs.writeFileSync(file, mine);
    const dry = await mcpConfig(['--client', 'vscode', '--write', '--dry-run', '--config-file', file]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).toBe(mine);
    expect(Object.keys(JSON.parse(dry.stdout).servers)).toEqual(['berth']);
    expect(dry.stdout).not.toContain('keep-me-off-stdout');
    expect(dry.stderr).toContain(`--write would merge it into ${file} (nothing written)`);

    // What a real run refuses, a dry run refuses too.
    const bad = await mcpConfig(['--client', 'cursor', '--dry-run', '--email', 'dev@example.test', '--team', '1']);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(/dev@example\.test is not a member of Root Team/);

    expect(await tokens()).toEqual(before);
    expect((await auditOf('1')).length).toBe(auditBefore);
  });

  it("each token it makes is audited as `berth token create`'s: the cli door, its holder, its id, never its value", async () => {
    const r = await mcpConfig(['--client', 'cursor', '--permissions', 'read,write', '--expires', '30d']);
    expect(r.code, r.stderr).toBe(0);
    const token = JSON.parse(r.stdout).mcpServers.berth.env.BERTH_TOKEN as string;
    const id = Number(token.split('|')[0]);
    const entry = (await auditOf('1')).find((e) => e.targets.includes(`token:${id}`));
    expect(entry).toMatchObject({
      operation: 'create_token',
      door: 'cli',
      result: 'ok',
      status: 201,
      token_id: null,
      source_ip: null,
      arguments: { email: 'admin@localhost.localdomain', team: '1', name: 'mcp-config cursor', permissions: ['read', 'write'], expires: '30d' },
    });
    expect(JSON.stringify(await auditOf('1'))).not.toContain(token.split('|')[1]);
  });

  it('a file that cannot be written takes its token with it: made, then revoked, both audited', async () => {
    const before = await tokens();
    // Read as missing, then no file can be made there (procfs): the write fails after the token exists.
    const r = await mcpConfig(['--client', 'cursor', '--write', '--config-file', '/proc/self/berth-mcp.json']);
    expect(r.code).not.toBe(0);
    expect(await tokens()).toEqual(before);
    const [revoked, created] = await auditOf('1');
    expect(created).toMatchObject({ operation: 'create_token', result: 'ok', door: 'cli', arguments: { name: 'mcp-config cursor' } });
    expect(revoked).toMatchObject({ operation: 'revoke_token', result: 'ok', door: 'cli', targets: created!.targets });
  });

  it('--email, --team and --permissions choose the holder, by the same rules as token create', async () => {
    const r = await mcpConfig(['--client', 'cursor', '--email', 'dev@example.test', '--team', 'Apps', '--permissions', 'read']);
    expect(r.code, r.stderr).toBe(0);
    const apps = await tokens('Apps');
    expect(apps).toHaveLength(1);
    expect(apps[0]).toMatchObject({ email: 'dev@example.test', permissions: ['read'], name: 'mcp-config cursor' });

    const before = (await tokens()).length;
    for (const [args, message] of [
      [['--email', 'dev@example.test', '--team', '1'], /dev@example\.test is not a member of Root Team/],
      [['--permissions', 'read,fly'], /Unknown permission "fly"/],
      [['--client', 'emacs'], /Unknown client "emacs"/],
      [['--http', 'ftp://x'], /use an http:\/\/ or https:\/\/ URL/],
    ] as const) {
      const bad = await mcpConfig(['--client', 'cursor', ...args]);
      expect(bad.code, args.join(' ')).not.toBe(0);
      expect(bad.stdout).toBe('');
      expect(bad.stderr).toMatch(message);
    }
    expect((await tokens()).length).toBe(before);
  });
});

describe('berth mcp-config --http', { timeout: 120_000 }, () => {
  let served: ServeProcess;
  beforeAll(async () => {
    served = await spawnServe(dataDir);
  });
  afterAll(async () => {
    await served?.stop();
  });

  it('prints an HTTP entry (url + Authorization) that a real SDK client uses to list the tools', async () => {
    for (const [client, type] of [
      ['claude-code', 'http'],
      ['vscode', 'http'],
      ['cursor', undefined],
      ['inspector', 'streamable-http'],
    ] as const) {
      const r = await mcpConfig(['--client', client, '--http', `${served.url}/`]);
      expect(r.code, r.stderr).toBe(0);
      const doc = JSON.parse(r.stdout);
      const entry = client === 'claude-code' ? doc : (doc.servers ?? doc.mcpServers).berth;
      expect(entry.type).toBe(type);
      expect(entry.url).toBe(`${served.url}/mcp`);
      expect(entry.headers.Authorization).toMatch(/^Bearer \d+\|/);
    }
    const entry = JSON.parse((await mcpConfig(['--client', 'claude-code', '--http', served.url])).stdout);
    const client = new Client({ name: 'http-like', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers: entry.headers } }));
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it('Claude Desktop (no headers in its file) gets remote mode: a local stdio berth calling that URL', async () => {
    const r = await mcpConfig(['--client', 'claude-desktop', '--http', `${served.url}/mcp`]);
    expect(r.code, r.stderr).toBe(0);
    const printed = JSON.parse(r.stdout).mcpServers.berth;
    expect(printed.args).toEqual([fs.realpathSync(CLI), 'mcp', '--api-url', served.url]);
    const client = new Client({ name: 'desktop-remote', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: printed.command, args: printed.args, env: printed.env, cwd: freshDir(), stderr: 'pipe' }));
    try {
      const team = await client.callTool({ name: 'get_current_team', arguments: {} });
      expect(team.isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });
});
