/**
 * What an agent pays to load berth and how it reaches the rest: the default list and its size
 * budget, toolsets enabled mid-session (tools/list_changed), describe_operation and
 * call_operation for clients that ignore list changes, answers sized for an agent, and errors
 * that say what to do next. Real servers, real SDK clients.
 */
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHint, BerthError, fromWire } from '../../src/errors.js';
import { operations } from '../../src/core/operations/index.js';
import { AGENT_LOG_CHARS, agentOutputValue } from '../../src/mcp/tools/agent-view.js';
import { CLI, CLIENT_KINDS, errorBody, httpClient, stdioClient, type AnyClient } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { remoteClient } from './remote/helpers.js';
import { storeEnv } from '../helpers/store.js';

const META = ['list_toolsets', 'enable_toolsets', 'describe_operation', 'call_operation'];
const KB = 1024;
/** The default set as agents are promised it (declared by `default: true` on each operation). */
const DEFAULT_TOOLS = [
  'list_teams',
  'get_current_team',
  'enable_api',
  'disable_api',
  'list_resources',
  'list_destinations',
  'get_application',
  'get_database',
  'get_service',
  'deploy',
  'get_deployment',
  ...['application', 'database', 'service'].flatMap((k) => [`start_${k}`, `stop_${k}`, `restart_${k}`, `get_${k}_logs`]),
  'migrate_application',
  'migrate_database',
  'migrate_service',
  'get_migration',
];
/** The default set in list order (operations are listed in declaration order). */
const DEFAULTS = operations.filter((o) => o.default).map((o) => o.name);

let s: TestServer;
let projectUuid: string;
let serverUuid: string;
beforeAll(async () => {
  s = await startTestServer();
  const token = s.rootToken;
  projectUuid = (await call(s.url, 'POST', '/api/v1/projects', { token, body: { name: 'agents' } })).json.uuid;
  serverUuid = (await call(s.url, 'POST', '/api/v1/servers', { token, body: { name: 'box', ip: '10.0.0.9' } })).json.uuid;
  for (let i = 0; i < 30; i++) {
    const r = await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
      token,
      body: {
        project_uuid: projectUuid,
        server_uuid: serverUuid,
        environment_name: 'production',
        name: `app-${i}`,
        docker_registry_image_name: 'nginx',
        docker_registry_image_tag: '1.27',
        ports_exposes: '80',
        description: 'x'.repeat(200),
      },
    });
    expect(r.status).toBe(201);
  }
}, 60_000);
afterAll(() => s.stop());

const defaultStdio = (token = s.rootToken, args: string[] = []) => stdioClient('v2-modern', s.dataDir, token, ['--toolsets', 'default', ...args]);
const sizeOf = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
async function using<T>(c: AnyClient, f: (c: AnyClient) => Promise<T>): Promise<T> {
  try {
    return await f(c);
  } finally {
    await c.close();
  }
}

describe('the default list', () => {
  it('holds the mission’s operations; enable_api and disable_api only for a root token of the root team', async () => {
    for (const n of ['list_teams', 'get_current_team', 'enable_api', 'disable_api', 'migrate_application', 'migrate_service']) expect(DEFAULT_TOOLS).toContain(n);
    const names = async (token: string) => using(await defaultStdio(token), async (c) => (await c.listTools()).tools.map((t) => t.name));
    const root = await names(s.rootToken);
    for (const n of ['list_teams', 'get_current_team', 'enable_api', 'disable_api', 'migrate_application', 'migrate_service']) expect(root).toContain(n);
    // read/write/deploy of the root team, and a root token of another team: no API switch.
    const plain = await names((await s.token({ permissions: ['read', 'write', 'deploy'] })).token);
    const otherTeamRoot = (await s.team('Not the root team')).rootToken;
    for (const list of [plain, await names(otherTeamRoot)]) {
      expect(list).toEqual(expect.arrayContaining(['list_teams', 'get_current_team', 'migrate_application', 'migrate_service']));
      expect(list).not.toContain('enable_api');
      expect(list).not.toContain('disable_api');
    }
  });

  it('is the core an agent uses most, plus the four ways to reach the rest, within the size budget', async () => {
    const tools = await using(await defaultStdio(), async (c) => (await c.listTools()).tools);
    expect(tools.map((t) => t.name)).toEqual([...DEFAULTS, ...META]);
    expect([...DEFAULTS].sort()).toEqual([...DEFAULT_TOOLS].sort());
    // The budget is what a root token's tools/list costs an agent in every conversation.
    expect(sizeOf(tools), 'default tools/list bytes').toBeLessThanOrEqual(24 * KB);
    for (const t of tools) {
      expect(sizeOf(t), t.name).toBeLessThanOrEqual(2.5 * KB);
      expect(t.outputSchema, t.name).toBeTruthy();
    }
  });

  it('with every operation listed, no tool is over 2.5 KB and every one keeps its output schema', async () => {
    const tools = await using(await stdioClient('v2-modern', s.dataDir, s.rootToken, ['--toolsets', 'all']), async (c) => (await c.listTools()).tools);
    expect(tools.map((t) => t.name).sort()).toEqual(operations.map((o) => o.name).sort());
    for (const t of tools) {
      expect(sizeOf(t), t.name).toBeLessThanOrEqual(2.5 * KB);
      expect((t.outputSchema as { type?: string }).type, t.name).toBe('object');
      // zod's safe-integer bounds say nothing a model needs.
      expect(JSON.stringify(t), t.name).not.toContain(String(Number.MAX_SAFE_INTEGER));
    }
  });

  it('a read token gets the read part of the default set; read-only mode narrows it the same way', async () => {
    const reader = await s.token({ permissions: ['read'] });
    const readDefaults = DEFAULTS.filter((n) => {
      const op = operations.find((o) => o.name === n)!;
      return op.permission === 'read' || op.permission === 'authenticated';
    });
    const names = await using(await defaultStdio(reader.token), async (c) => (await c.listTools()).tools.map((t) => t.name));
    expect(names).toEqual([...readDefaults, ...META]);
    const ro = await using(await defaultStdio(s.rootToken, ['--read-only']), async (c) => (await c.listTools()).tools.map((t) => t.name));
    expect(ro).toEqual([...DEFAULTS.filter((n) => operations.find((o) => o.name === n)!.annotations.readOnly), ...META]);
  });

  it('an unknown toolset word is refused at start with the accepted ones', async () => {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, [CLI, 'mcp', '--data', s.dataDir, '--toolsets', 'default,nope'], {
      env: { BERTH_TOKEN: s.rootToken, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir) },
      encoding: 'utf8',
      input: '',
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/unknown toolset nope.*default, all, teams/);
    expect(r.stdout).toBe('');
  });
});

describe('reaching the rest over stdio', () => {
  it('enable_toolsets adds a group, announces tools/list_changed once, and the new tools work', async () => {
    const c = new V1Client({ name: 'berth-toolsets-test', version: '1.0.0' });
    let changes = 0;
    c.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changes++;
    });
    await c.connect(
      new V1StdioTransport({ command: process.execPath, args: [CLI, 'mcp', '--data', s.dataDir], env: { BERTH_TOKEN: s.rootToken, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir) }, stderr: 'pipe' }),
    );
    try {
      expect(c.getServerCapabilities()?.tools?.listChanged).toBe(true);
      const before = (await c.listTools()).tools.map((t) => t.name);
      expect(before).not.toContain('create_project');

      const sets = (await c.callTool({ name: 'list_toolsets', arguments: {} })).structuredContent as { toolsets: Array<{ name: string; listed: boolean; tools: string[] }> };
      const projects = sets.toolsets.find((t) => t.name === 'projects')!;
      expect(projects).toMatchObject({ listed: false });
      expect(projects.tools).toContain('create_project');

      const r = await c.callTool({ name: 'enable_toolsets', arguments: { toolsets: ['projects'] } });
      expect((r.structuredContent as { added: string[] }).added.sort()).toEqual([...projects.tools].sort());
      await expect.poll(() => changes).toBe(1);
      const after = (await c.listTools()).tools.map((t) => t.name);
      expect(after).toEqual(expect.arrayContaining(projects.tools));
      const created = await c.callTool({ name: 'create_project', arguments: { name: 'enabled later' } });
      expect(created.isError).toBeFalsy();
      expect(created.structuredContent).toMatchObject({ uuid: expect.any(String) });

      // Enabling it again adds nothing and announces nothing.
      expect((await c.callTool({ name: 'enable_toolsets', arguments: { toolsets: ['projects'] } })).structuredContent).toEqual({ added: [] });
      const bad = await c.callTool({ name: 'enable_toolsets', arguments: { toolsets: ['nope'] } });
      expect(bad.isError).toBe(true);
      expect(JSON.parse((bad.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ message: 'Validation error.', errors: { 'toolsets.0': expect.any(Array) } });
      await new Promise((res) => setTimeout(res, 100));
      expect(changes).toBe(1);
    } finally {
      await c.close();
    }
  });

  it('call_operation runs an unlisted operation exactly as its tool would: own schema, same answer', async () => {
    await using(await defaultStdio(), async (c) => {
      const invalid = errorBody(await c.callTool('call_operation', { name: 'create_project', arguments: { name: 'ok', extra: 1 } }));
      expect(invalid).toMatchObject({ message: 'Validation error.', errors: { extra: ['This field is not allowed.'] }, hint: expect.stringContaining('describe_operation') });
      const made = await c.callTool('call_operation', { name: 'create_project', arguments: { name: 'by name' } });
      expect(made.isError).toBeFalsy();
      const uuid = (made.structuredContent as { name: string; result: { uuid: string } }).result.uuid;
      const rest = await call(s.url, 'GET', `/api/v1/projects/${uuid}`, { token: s.rootToken });
      expect(rest.json).toMatchObject({ uuid, name: 'by name' });
      expect(errorBody(await c.callTool('call_operation', { name: 'no_such_operation' }))).toMatchObject({ errors: { name: [expect.stringContaining('list_toolsets')] } });
      expect(errorBody(await c.callTool('call_operation', { name: 'get_project', arguments: { uuid: 'missing' } }))).toEqual({
        message: 'Resource not found.',
        hint: expect.stringContaining('call_operation with name list_projects'),
      });
    });
  });

  it('call_operation keeps permissions and read-only mode: what a token may not do answers what it needs, and runs nothing', async () => {
    const reader = await s.token({ permissions: ['read'] });
    await using(await defaultStdio(reader.token), async (c) => {
      expect(errorBody(await c.callTool('call_operation', { name: 'create_project', arguments: { name: 'nope' } }))).toEqual({
        message: 'Missing required permissions: write',
        missing_permissions: ['write'],
        token_permissions: ['read'],
        hint: expect.stringContaining('lacks write (it has read)'),
      });
      // Called directly, the same answer (not "tool not found").
      expect(errorBody(await c.callTool('delete_project', { uuid: projectUuid }))).toMatchObject({ missing_permissions: ['write'], token_permissions: ['read'] });
      expect((await c.callTool('call_operation', { name: 'list_projects' })).isError).toBeFalsy();
      expect(errorBody(await c.callTool('call_operation', { name: 'no_such_operation' }))).toMatchObject({ errors: { name: expect.any(Array) } });
    });
    await using(await defaultStdio(s.rootToken, ['--read-only']), async (c) => {
      expect(errorBody(await c.callTool('call_operation', { name: 'delete_project', arguments: { uuid: projectUuid } }))).toMatchObject({
        missing_permissions: ['write'],
        hint: expect.stringContaining('read-only'),
      });
    });
    expect((await call(s.url, 'GET', `/api/v1/projects/${projectUuid}`, { token: s.rootToken })).status).toBe(200);
  });

  it('a tool the token may use but the list leaves out runs when called by name, on every door, and stays unlisted', async () => {
    const reader = await s.token({ permissions: ['read'] });
    const args = { per_page: 5 };
    const doors: Array<[string, () => Promise<AnyClient>]> = [
      ['stdio', () => defaultStdio(reader.token)],
      ...CLIENT_KINDS.map((k): [string, () => Promise<AnyClient>] => [`http ${k}`, () => httpClient(k, s.url, reader.token, { 'X-Berth-Toolsets': 'default' })]),
      ['remote', () => remoteClient('v2-modern', s.url, reader.token, ['--toolsets', 'default'])],
    ];
    for (const [door, open] of doors) {
      await using(await open(), async (c) => {
        const r = await c.callTool('list_projects', args);
        expect(r.isError, door).toBeFalsy();
        const via = (await c.callTool('call_operation', { name: 'list_projects', arguments: args })).structuredContent as { result: unknown };
        expect(r.structuredContent, door).toEqual(via.result);
        // Its own schema still holds, with the operation's hint; the list is what it was.
        expect(errorBody(await c.callTool('list_projects', { nope: 1 })), door).toMatchObject({ errors: { nope: ['This field is not allowed.'] } });
        expect(
          (await c.listTools()).tools.map((t) => t.name),
          door,
        ).not.toContain('list_projects');
      });
    }
  });

  it('describe_operation gives any reachable operation its schemas and says whether it is listed', async () => {
    await using(await defaultStdio(), async (c) => {
      const d = (await c.callTool('describe_operation', { name: 'create_project' })).structuredContent as Record<string, unknown>;
      expect(d).toMatchObject({ name: 'create_project', toolset: 'projects', listed: false });
      expect((d.input_schema as { properties: Record<string, unknown> }).properties).toHaveProperty('name');
      expect((d.output_schema as { type: string }).type).toBe('object');
      expect(((await c.callTool('describe_operation', { name: 'deploy' })).structuredContent as { listed: boolean }).listed).toBe(true);
    });
  });
});

describe('over HTTP', () => {
  const names = async (headers: Record<string, string>, path = '') => {
    const c = await httpClient('v2-modern', s.url + path, s.rootToken, headers);
    return using(c, async (x) => (await x.listTools()).tools.map((t) => t.name));
  };

  it('lists the default set (no enable_toolsets: stateless) unless the header or query names groups', async () => {
    const stateless = META.filter((n) => n !== 'enable_toolsets');
    expect(await names({ 'X-Berth-Toolsets': '' })).toEqual([...DEFAULTS, ...stateless]);
    const projectTools = operations.filter((o) => o.toolset === 'projects').map((o) => o.name);
    expect(await names({ 'X-Berth-Toolsets': 'projects' })).toEqual([...projectTools, ...stateless]);
    expect((await names({ 'X-Berth-Toolsets': '' }, '/mcp?toolsets=default,projects')).sort()).toEqual([...DEFAULT_TOOLS, ...projectTools, ...stateless].sort());
  });

  it('a bad selection is a 422 naming toolsets', async () => {
    const r = await call(s.url, 'POST', '/mcp', {
      token: s.rootToken,
      headers: { 'X-Berth-Toolsets': 'default,nope', Accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    });
    expect(r.status).toBe(422);
    expect(r.json).toEqual({ message: 'Validation error.', errors: { toolsets: [expect.stringContaining('unknown toolset nope')] } });
  });

  it('call_operation works without a session', async () => {
    const c = await httpClient('v1', s.url, s.rootToken, { 'X-Berth-Toolsets': 'default' });
    await using(c, async (x) => {
      const r = await x.callTool('call_operation', { name: 'list_projects' });
      expect(r.isError).toBeFalsy();
      expect((r.structuredContent as { result: { total: number } }).result.total).toBeGreaterThan(0);
    });
  });
});

describe('answers sized for an agent', () => {
  it('lists are summaries, 10 to a page, under 8 KB; detail "full" and per_page ask for more', async () => {
    await using(await defaultStdio(), async (c) => {
      const r = await c.callTool('call_operation', { name: 'list_applications' });
      const page = (r.structuredContent as { result: { items: Array<Record<string, unknown>>; total: number; per_page: number } }).result;
      expect(page.total).toBe(30);
      expect(page.per_page).toBe(10);
      expect(page.items).toHaveLength(10);
      for (const it of page.items) expect(Object.keys(it).sort()).toEqual(['destination_uuid', 'name', 'project_uuid', 'server_uuid', 'status', 'uuid']);
      expect(sizeOf(r.content)).toBeLessThanOrEqual(8 * KB);

      const listed = await c.callTool('list_resources', { per_page: 30 });
      expect(sizeOf(listed.content)).toBeLessThanOrEqual(8 * KB);
      expect((listed.structuredContent as { items: unknown[] }).items).toHaveLength(30);

      const full = (await c.callTool('call_operation', { name: 'list_applications', arguments: { detail: 'full', per_page: 2 } })).structuredContent as {
        result: { items: Array<Record<string, unknown>> };
      };
      expect(full.result.items).toHaveLength(2);
      expect(full.result.items[0]).toMatchObject({ description: 'x'.repeat(200), docker_registry_image_name: 'nginx' });
    });
    // REST keeps Coolify's full records.
    const rest = await call(s.url, 'GET', '/api/v1/applications', { token: s.rootToken });
    expect(rest.json[0]).toHaveProperty('docker_registry_image_name');
  });

  it('logs keep their tail with a marker unless full is asked for', () => {
    const op = operations.find((o) => o.name === 'get_deployment')!;
    const logs = Array.from({ length: 2_000 }, (_, i) => `line ${i}`).join('\n');
    const out = agentOutputValue(op, { deployment_uuid: 'd', status: 'failed', logs, logs_truncated: false }, false) as { logs: string; logs_truncated: boolean };
    expect(out.logs_truncated).toBe(true);
    expect(out.logs.startsWith('[… ')).toBe(true);
    expect(out.logs.endsWith('line 1999')).toBe(true);
    expect(out.logs.length).toBeLessThan(AGENT_LOG_CHARS + 80);
    expect(agentOutputValue(op, { deployment_uuid: 'd', status: 'failed', logs, logs_truncated: false }, true)).toMatchObject({ logs, logs_truncated: false });
  });
});

describe('errors that say what to do next', () => {
  it('each kind has a hint that names the next step', () => {
    expect(agentHint(new BerthError('not_found'), { listTool: 'list_servers', thing: 'server' })).toMatch(/list_servers lists the servers/);
    expect(agentHint(new BerthError('missing_permissions', { missingPermissions: ['write'] }))).toMatch(/lacks write/);
    expect(agentHint(new BerthError('rate_limited', { retryAfter: 7.2 }))).toMatch(/Wait 8 s/);
    expect(agentHint(new BerthError('queue_full', { retryAfter: 3 }))).toMatch(/Wait 3 s/);
    expect(agentHint(new BerthError('validation', { errors: {} }))).toMatch(/describe_operation/);
    expect(agentHint(new BerthError('conflict'))).toBeUndefined();
  });

  it('an upstream answer reads back as the same kind (remote mode gives the same hints)', () => {
    expect(fromWire(404, { message: 'Resource not found.' })?.kind).toBe('not_found');
    expect(fromWire(403, { message: 'API is disabled.' })?.kind).toBe('api_disabled');
    expect(fromWire(403, { message: 'Missing required permissions: deploy', missing_permissions: ['deploy'] })?.details.missingPermissions).toEqual(['deploy']);
    expect(fromWire(429, { message: 'Deployment queue is full.', retry_after: 5 })).toMatchObject({ kind: 'queue_full', details: { retryAfter: 5 } });
    expect(fromWire(500, { message: 'Server error.' })).toBeUndefined();
  });

  it('not found in the default set points at list_resources for resources; the answer is the same for missing and foreign', async () => {
    const other = await s.team('Neighbours');
    const theirs = (await call(s.url, 'POST', '/api/v1/projects', { token: other.rootToken, body: { name: 'theirs' } })).json.uuid;
    await using(await defaultStdio(), async (c) => {
      const missing = errorBody(await c.callTool('get_application', { uuid: 'nosuchapp' }));
      expect(missing).toEqual({ message: 'Resource not found.', hint: expect.stringContaining('list_resources lists the applications') });
      const foreign = errorBody(await c.callTool('call_operation', { name: 'get_project', arguments: { uuid: theirs } }));
      const absent = errorBody(await c.callTool('call_operation', { name: 'get_project', arguments: { uuid: 'nosuchproject' } }));
      expect(foreign).toEqual(absent);
    });
  });
});

describe('remote mode', () => {
  it('offers the same default list and meta tools, and call_operation answers as locally', async () => {
    const remote = await remoteClient('v2-modern', s.url, s.rootToken, ['--toolsets', 'default']);
    const local = await defaultStdio();
    try {
      expect((await remote.listTools()).tools.map((t) => t.name)).toEqual((await local.listTools()).tools.map((t) => t.name));
      const args = { name: 'list_projects', arguments: { per_page: 5 } };
      expect((await remote.callTool('call_operation', args)).structuredContent).toEqual((await local.callTool('call_operation', args)).structuredContent);
      const miss = { name: 'get_project', arguments: { uuid: 'nosuchproject' } };
      expect(errorBody(await remote.callTool('call_operation', miss))).toEqual(errorBody(await local.callTool('call_operation', miss)));
    } finally {
      await Promise.all([remote.close(), local.close()]);
    }
  });
});
