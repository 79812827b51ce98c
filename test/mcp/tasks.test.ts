/**
 * MCP tasks (issue 38 item 2) against a real server, on both stores: the 2025-11-25 tasks utility
 * with the v1 SDK client's experimental tasks API over streamable HTTP, and the 2026-07-28 tasks
 * extension (SEP-2663) with raw JSON-RPC (the v2 client cannot receive a task). The calls start a
 * record-only application (a real deployment through the job queue that ends at once); the long
 * call on a real engine, and cancelling its deployment, are in test/e2e/mcp-tasks.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { loadConfig } from '../../src/config/config.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { LAPSED_MESSAGE } from '../../src/mcp/tasks/store.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';

const LEASE_MS = 3_000;
let s: TestServer;
/** A second instance on the same store. */
let b: RunningServer;
let appUuid: string;
let other: { id: number; rootToken: string };
let sameTeam: string;

const ok = async (token: string, method: string, path: string, body?: unknown) => {
  const r = await call(s.url, method, `/api/v1${path}`, { token, body });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
};

beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0, jobLeaseMs: LEASE_MS });
  b = await startServer(loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: s.dataDir, databaseUrl: storeUrlFor(s.dataDir), host: '127.0.0.1', port: 0, apiRateLimit: 0, jobLeaseMs: LEASE_MS }), () => {});
  const server = await ok(s.rootToken, 'POST', '/servers', { name: 'record-only', ip: '10.0.0.1' });
  const project = await ok(s.rootToken, 'POST', '/projects', { name: 'tasks' });
  appUuid = (
    await ok(s.rootToken, 'POST', '/applications/dockerimage', {
      project_uuid: project.uuid,
      server_uuid: server.uuid,
      environment_name: 'production',
      docker_registry_image_name: 'nginx',
      docker_registry_image_tag: '1.27',
      ports_exposes: '80',
    })
  ).uuid;
  other = await s.team('Neighbours');
  sameTeam = (await s.token({ permissions: ['root'], role: 'owner' })).token;
}, 60_000);
afterAll(async () => {
  await b?.close();
  await s?.stop();
});

async function v1(token: string, url = s.url): Promise<V1Client> {
  const c = new V1Client({ name: 'berth-test-v1', version: '1.0.0' });
  await c.connect(new V1HttpTransport(new URL('/mcp', url), { requestInit: { headers: { Authorization: `Bearer ${token}`, 'X-Berth-Toolsets': 'all' } } }));
  return c;
}

/** The JSON-RPC error a v1 client call failed with. */
async function rpcError(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (err) {
    return { code: (err as { code: number }).code, message: (err as Error).message };
  }
  throw new Error('expected the call to fail');
}

describe('2025-11-25 tasks utility (v1 SDK client, streamable HTTP)', () => {
  it('advertises tasks and which tools run as one', async () => {
    const c = await v1(s.rootToken);
    expect(c.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await c.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    for (const name of [
      'start_application',
      'deploy',
      'migrate_application',
      'stop_database',
      'run_database_storage_backup',
      'restore_database_backup_execution',
      'execute_application_scheduled_task',
      'run_server_docker_cleanup',
    ])
      expect(support[name], name).toBe('optional');
    for (const name of ['get_application', 'list_resources', 'create_project', 'get_deployment', 'create_database_backup']) expect(support[name], name).toBeUndefined();
    await c.close();
  });

  it('a task-augmented call answers with its task at once, and the task ends with what the call answers', async () => {
    const c = await v1(s.rootToken);
    const plain = (await c.callTool({ name: 'start_application', arguments: { uuid: appUuid } })) as { structuredContent?: Record<string, unknown> };
    const started = performance.now();
    const seen: Array<{ type: string; [k: string]: unknown }> = [];
    let createdAfter = 0;
    for await (const m of c.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: appUuid } }, CallToolResultSchema, { task: { ttl: 60_000 } })) {
      if (m.type === 'taskCreated') createdAfter = performance.now() - started;
      seen.push(m as never);
    }
    expect(seen[0]!.type).toBe('taskCreated');
    expect(createdAfter).toBeLessThan(500);
    const task = (seen[0] as unknown as { task: { taskId: string; status: string; ttl: number; pollInterval: number } }).task;
    expect(task).toMatchObject({ status: 'working', ttl: 60_000, pollInterval: 1_000 });
    const last = seen.at(-1) as unknown as { type: string; result: { structuredContent: Record<string, unknown>; isError?: boolean } };
    expect(last.type).toBe('result');
    expect(last.result.isError).toBeFalsy();
    // The same answer as the plain call, but for its own deployment.
    expect(Object.keys(last.result.structuredContent).sort()).toEqual(Object.keys(plain.structuredContent!).sort());
    expect(last.result.structuredContent.deployment_status).toBe(plain.structuredContent!.deployment_status);
    expect(last.result.structuredContent.deployment_uuid).not.toBe(plain.structuredContent!.deployment_uuid);

    const got = await c.experimental.tasks.getTask(task.taskId);
    expect(got).toMatchObject({ taskId: task.taskId, status: 'completed', ttl: 60_000 });
    const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toEqual(last.result.structuredContent);
    expect(result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId: task.taskId });
    const listed = await c.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(task.taskId);
    // An ended task cannot be cancelled (2025: -32602).
    expect((await rpcError(c.experimental.tasks.cancelTask(task.taskId))).code).toBe(-32602);
    await c.close();
  });

  it('a tool error is the task result (completed, isError), and a tool that runs at once refuses a task (-32601)', async () => {
    const c = await v1(s.rootToken);
    const msgs = [];
    for await (const m of c.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: 'no-such-application-0000' } }, CallToolResultSchema, { task: {} })) msgs.push(m);
    const end = msgs.at(-1) as { type: string; result?: { isError?: boolean; content: Array<{ text: string }> } };
    expect(end.type).toBe('result');
    expect(end.result?.isError).toBe(true);
    expect(JSON.parse(end.result!.content[0]!.text)).toMatchObject({ message: 'Validation error.' });

    const refused = await rpcError(c.request({ method: 'tools/call', params: { name: 'get_application', arguments: { uuid: appUuid }, task: {} } }, CallToolResultSchema));
    expect(refused.code).toBe(-32601);
    await c.close();
  });

  it("another token's task is not found, exactly as a missing one; tasks/list shows only the token's own", async () => {
    const c = await v1(s.rootToken);
    let taskId = '';
    for await (const m of c.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: appUuid } }, CallToolResultSchema, { task: {} })) {
      if (m.type === 'taskCreated') taskId = m.task.taskId;
    }
    for (const token of [sameTeam, other.rootToken]) {
      const o = await v1(token);
      const foreign = await rpcError(o.experimental.tasks.getTask(taskId));
      const missing = await rpcError(o.experimental.tasks.getTask('00000000-0000-4000-8000-000000000000'));
      expect(foreign).toEqual(missing);
      expect(foreign.code).toBe(-32602);
      expect(await rpcError(o.experimental.tasks.getTaskResult(taskId, CallToolResultSchema))).toEqual(missing);
      expect(await rpcError(o.experimental.tasks.cancelTask(taskId))).toEqual(missing);
      expect((await o.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(taskId);
      await o.close();
    }
    // Still the owner's, unchanged.
    expect((await c.experimental.tasks.getTask(taskId)).status).toBe('completed');
    await c.close();
  });

  it('a ttl past the maximum is cut to it; none asked gets the default', async () => {
    const c = await v1(s.rootToken);
    const ask = async (task: Record<string, unknown>) =>
      (await c.request({ method: 'tools/call', params: { name: 'start_application', arguments: { uuid: appUuid }, task } }, CreateTaskResultSchema)).task.ttl;
    expect(await ask({ ttl: 10 ** 12 })).toBe(86_400_000);
    expect(await ask({})).toBe(3_600_000);
    await c.close();
  });

  it('a task made through one instance is read through another', async () => {
    const a = await v1(s.rootToken);
    let taskId = '';
    for await (const m of a.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: appUuid } }, CallToolResultSchema, { task: {} })) {
      if (m.type === 'taskCreated') taskId = m.task.taskId;
    }
    const onB = await v1(s.rootToken, b.url);
    expect(await onB.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'completed' });
    expect((await onB.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).structuredContent).toMatchObject({ deployment_uuid: expect.any(String) });
    await a.close();
    await onB.close();
  });

  it('tasks/list pages with an opaque cursor; a cursor that is not one of the token’s tasks is invalid params', async () => {
    const c = await v1(s.rootToken);
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await c.experimental.tasks.listTasks(cursor);
      all.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBeGreaterThan(0);
    expect((await rpcError(c.experimental.tasks.listTasks('not-a-cursor'))).code).toBe(-32602);
    await c.close();
  });
});

describe('task records: ttl and the instance that stopped', () => {
  it('a task is kept for its ttl, then swept', async () => {
    const c = await v1(s.rootToken);
    let taskId = '';
    for await (const m of c.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: appUuid } }, CallToolResultSchema, { task: { ttl: 4_000 } })) {
      if (m.type === 'taskCreated') taskId = m.task.taskId;
    }
    expect((await c.experimental.tasks.getTask(taskId)).ttl).toBe(4_000);
    const row = () => s.db.selectFrom('mcp_tasks').select('id').where('task_id', '=', taskId).executeTakeFirst();
    expect(await row()).toBeDefined();
    // Past its ttl it is not found at once, and a tick (every third of the lease) removes it.
    const made = await s.db.selectFrom('mcp_tasks').select('created_at').where('task_id', '=', taskId).executeTakeFirstOrThrow();
    await new Promise((r) => setTimeout(r, Date.parse(made.created_at) + 4_000 - Date.now() + LEASE_MS / 3 + 500));
    expect((await rpcError(c.experimental.tasks.getTask(taskId))).code).toBe(-32602);
    expect(await row()).toBeUndefined();
    await c.close();
  });

  it('a working task whose instance stopped renewing its lease ends failed, saying so', async () => {
    // As a killed instance leaves it: working, its lease run out.
    const token = await s.db.selectFrom('api_tokens').select(['id', 'team_id']).orderBy('id').executeTakeFirstOrThrow();
    const now = new Date();
    await s.db
      .insertInto('mcp_tasks')
      .values({
        task_id: 'lapsed-task-0001',
        team_id: token.team_id,
        token_id: token.id,
        tool: 'start_application',
        status: 'working',
        status_message: 'The call is running.',
        result: null,
        error: null,
        job_kind: null,
        job_uuid: null,
        ttl_ms: 60_000,
        lease_owner: 'a-dead-instance',
        lease_until: Date.now() - 1,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
        expires_at: new Date(now.getTime() + 60_000).toISOString(),
      })
      .execute();
    const c = await v1(s.rootToken);
    let got = await c.experimental.tasks.getTask('lapsed-task-0001');
    for (let i = 0; got.status === 'working' && i < 40; i++) {
      await new Promise((r) => setTimeout(r, 250));
      got = await c.experimental.tasks.getTask('lapsed-task-0001');
    }
    expect(got).toMatchObject({ status: 'failed', statusMessage: LAPSED_MESSAGE });
    const failed = await rpcError(c.experimental.tasks.getTaskResult('lapsed-task-0001', CallToolResultSchema));
    expect(failed.message).toContain('stopped before it ended');
    await c.close();
  });
});

/** One raw 2026-07-28 request: the envelope in params._meta, the routing headers, the JSON answer. */
async function modern(token: string, method: string, params: Record<string, unknown>, opts: { tasks?: boolean; url?: string } = {}) {
  const name = method === 'tools/call' ? params.name : params.taskId;
  const res = await fetch(new URL('/mcp', opts.url ?? s.url), {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'X-Berth-Toolsets': 'all',
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': method,
      ...(typeof name === 'string' ? { 'Mcp-Name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': opts.tasks ? { extensions: { 'io.modelcontextprotocol/tasks': {} } } : {},
        },
      },
    }),
  });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('text/event-stream')
    ? JSON.parse(
        text
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
      )
    : JSON.parse(text);
  return { status: res.status, result: json.result as Record<string, any> | undefined, error: json.error as { code: number; message: string; data?: unknown } | undefined };
}

async function ended(token: string, taskId: string) {
  for (let i = 0; i < 100; i++) {
    const r = await modern(token, 'tasks/get', { taskId }, { tasks: true });
    if (!['working', 'input_required'].includes(r.result?.status)) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('task did not end');
}

describe('2026-07-28 tasks extension (raw JSON-RPC over HTTP)', () => {
  it('advertises the extension, not capabilities.tasks', async () => {
    const r = await modern(s.rootToken, 'server/discover', {});
    expect(r.result?.capabilities.extensions).toMatchObject({ 'io.modelcontextprotocol/tasks': {} });
    expect(r.result?.capabilities.tasks).toBeUndefined();
  });

  it('a client that declared the extension gets a task for a task-capable tool; tasks/get inlines the result', async () => {
    const started = performance.now();
    const made = await modern(s.rootToken, 'tools/call', { name: 'start_application', arguments: { uuid: appUuid } }, { tasks: true });
    expect(performance.now() - started).toBeLessThan(500);
    const t = made.result!;
    expect(t).toMatchObject({ resultType: 'task', status: 'working', ttlMs: expect.any(Number), pollIntervalMs: 1_000 });
    for (const k of ['task', 'result', 'error', 'ttl', 'pollInterval', 'inputRequests', 'requestState']) expect(t, k).not.toHaveProperty(k);
    expect(t.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
    const done = await ended(s.rootToken, t.taskId);
    expect(done.result).toMatchObject({ resultType: 'complete', taskId: t.taskId, status: 'completed', result: { structuredContent: { deployment_uuid: expect.any(String) } } });
    expect(done.result!.result.content.length).toBeGreaterThan(0);
    expect(done.result!.result._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
    // Read through the other instance too.
    expect((await modern(s.rootToken, 'tasks/get', { taskId: t.taskId }, { tasks: true, url: b.url })).result).toMatchObject({ status: 'completed' });
    // Cancel of an ended task: the same acknowledgement; update: acknowledged.
    expect((await modern(s.rootToken, 'tasks/cancel', { taskId: t.taskId }, { tasks: true })).result).toMatchObject({ resultType: 'complete' });
    expect((await modern(s.rootToken, 'tasks/cancel', { taskId: t.taskId }, { tasks: true })).result).not.toHaveProperty('status');
    expect((await modern(s.rootToken, 'tasks/update', { taskId: t.taskId, inputResponses: {} }, { tasks: true })).result).toMatchObject({ resultType: 'complete' });
  });

  it('without the extension: a plain result, a legacy task param ignored, and tasks methods refused (-32021) before any lookup', async () => {
    const plain = await modern(s.rootToken, 'tools/call', { name: 'start_application', arguments: { uuid: appUuid }, task: { ttl: 60_000 } });
    expect(plain.result).toMatchObject({ resultType: 'complete', structuredContent: { deployment_uuid: expect.any(String) } });
    expect(plain.result).not.toHaveProperty('taskId');
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const r = await modern(s.rootToken, method, { taskId: 'gate-test', ...(method === 'tasks/update' ? { inputResponses: {} } : {}) });
      expect(r.error?.code, method).toBe(-32021);
      expect(r.status).toBe(400);
    }
    // A tool that runs at once stays a plain call for a declaring client.
    const read = await modern(s.rootToken, 'tools/call', { name: 'get_application', arguments: { uuid: appUuid } }, { tasks: true });
    expect(read.result).toMatchObject({ resultType: 'complete', structuredContent: { uuid: appUuid } });
  });

  it("an unknown or another token's task id is -32602, the same answer; tasks/result and tasks/list do not exist in this era", async () => {
    const made = await modern(s.rootToken, 'tools/call', { name: 'start_application', arguments: { uuid: appUuid } }, { tasks: true });
    const missing = await modern(other.rootToken, 'tasks/get', { taskId: 'no-such-task' }, { tasks: true });
    const foreign = await modern(other.rootToken, 'tasks/get', { taskId: made.result!.taskId }, { tasks: true });
    expect(missing.error?.code).toBe(-32602);
    expect({ ...foreign.error }).toEqual({ ...missing.error });
    expect((await modern(other.rootToken, 'tasks/cancel', { taskId: made.result!.taskId }, { tasks: true })).error).toEqual(missing.error);
    for (const method of ['tasks/result', 'tasks/list']) expect((await modern(s.rootToken, method, { taskId: made.result!.taskId }, { tasks: true })).error?.code, method).toBe(-32601);
  });
});
