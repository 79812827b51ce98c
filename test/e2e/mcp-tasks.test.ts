/**
 * MCP tasks on a real engine (issue 38 item 2): start_application for an application whose health
 * check passes only after a while answers with its task at once (the v1 SDK client's task API
 * over streamable HTTP), and the task ends with what the start answers; a start whose health check
 * keeps it starting is cancelled through tasks/cancel, and its deployment is cancelled with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, ensureSleeperImage, registerEngines, slowHealthApp, until, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)('MCP tasks on a real engine', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let client: V1Client;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    client = new V1Client({ name: 'berth-test-v1', version: '1.0.0' });
    await client.connect(new V1HttpTransport(new URL('/mcp', s.url), { requestInit: { headers: { Authorization: `Bearer ${s.rootToken}` } } }));
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await s?.stop();
  });

  const app = (name: string, delayS: number, startPeriodS: number) => slowHealthApp(api, p, name, { readyAfterS: delayS, startPeriodS, intervalS: 1 });

  it('a start that waits for its health check answers with its task at once; the task ends with the start’s answer', async () => {
    const uuid = await app('task-slow-start', 6, 30);
    const started = performance.now();
    const seen: Array<{ type: string; task?: { taskId: string; status: string }; result?: { structuredContent?: Record<string, unknown>; isError?: boolean } }> = [];
    for await (const m of client.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid } }, CallToolResultSchema, { task: { ttl: 120_000 } })) {
      seen.push({ ...(m as object), at: performance.now() - started } as never);
    }
    expect(seen[0]!.type).toBe('taskCreated');
    expect((seen[0] as unknown as { at: number }).at).toBeLessThan(500);
    // It stayed working while the health check had not passed (the client polled it so).
    expect(seen.filter((m) => m.type === 'taskStatus' && m.task?.status === 'working').length).toBeGreaterThan(2);
    const end = seen.at(-1)!;
    expect(end.type).toBe('result');
    expect(end.result?.isError).toBeFalsy();
    expect(end.result?.structuredContent).toMatchObject({ message: 'Application started.', deployment_status: 'finished' });
    const c = await engines.a.inspectContainer(uuid);
    expect(c.State.Running).toBe(true);
  }, 90_000);

  it('tasks/cancel cancels the task and the deployment it started', async () => {
    const uuid = await app('task-cancelled-start', 600, 300);
    let taskId = '';
    const stream = client.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid } }, CallToolResultSchema, { task: {} });
    const first = await stream.next();
    expect(first.value).toMatchObject({ type: 'taskCreated' });
    taskId = (first.value as { task: { taskId: string } }).task.taskId;
    // The deployment is running (the container starts, its health check is far off).
    const deployment = await until(
      'the task’s deployment to run',
      async () => {
        const row = await s.db.selectFrom('mcp_tasks').select('job_uuid').where('task_id', '=', taskId).executeTakeFirst();
        if (!row?.job_uuid) return undefined;
        const d = await api.ok('GET', `/deployments/${row.job_uuid}`);
        return d.status === 'in_progress' ? d : undefined;
      },
      30_000,
    );
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    expect(cancelled).toMatchObject({ taskId, status: 'cancelled' });
    expect((await api.ok('GET', `/deployments/${deployment.deployment_uuid}`)).status).toBe('cancelled-by-user');
    expect(await client.experimental.tasks.getTask(taskId)).toMatchObject({ status: 'cancelled' });
    // The client's stream ends with the cancellation.
    let last: unknown;
    for await (const m of { [Symbol.asyncIterator]: () => stream }) last = m;
    expect(last).toMatchObject({ type: 'error' });
  }, 90_000);
});
