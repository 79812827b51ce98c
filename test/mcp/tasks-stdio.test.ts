/**
 * MCP tasks over stdio (`berth mcp`, the built dist/bundle/cli.js) with the v1 SDK client's task
 * API: a task-augmented start answers with its task, ends with the start's answer, is announced
 * with notifications/tasks/status, and is read from the HTTP door of `serve` on the same store
 * (another process). Run `npm run build` first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { CLI } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';

let s: TestServer;
let appUuid: string;
beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0 });
  const ok = async (path: string, body: unknown) => (await call(s.url, 'POST', `/api/v1${path}`, { token: s.rootToken, body })).json;
  const server = await ok('/servers', { name: 'record-only', ip: '10.0.0.1' });
  const project = await ok('/projects', { name: 'tasks' });
  appUuid = (
    await ok('/applications/dockerimage', {
      project_uuid: project.uuid,
      server_uuid: server.uuid,
      environment_name: 'production',
      docker_registry_image_name: 'nginx',
      docker_registry_image_tag: '1.27',
      ports_exposes: '80',
    })
  ).uuid;
}, 60_000);
afterAll(() => s.stop());

describe('MCP tasks over stdio (v1 SDK client)', () => {
  it('a task-augmented call answers with its task, ends with the call’s answer, says so in notifications/tasks/status, and is read over HTTP', async () => {
    const c = new V1Client({ name: 'berth-test-v1', version: '1.0.0' });
    const statuses: Array<{ taskId: string; status: string }> = [];
    c.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params));
    await c.connect(
      new V1StdioTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--data', s.dataDir, '--toolsets', 'all'],
        env: { BERTH_TOKEN: s.rootToken, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir) },
        stderr: 'pipe',
      }),
    );
    try {
      expect(c.getServerCapabilities()?.tasks).toMatchObject({ requests: { tools: { call: {} } } });
      // The client marks the tool as task-capable from tools/list and asks for a task on its own.
      await c.listTools();
      const started = performance.now();
      const seen: Array<{ type: string; at: number; task?: { taskId: string }; result?: { structuredContent?: Record<string, unknown> } }> = [];
      for await (const m of c.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: appUuid } }, CallToolResultSchema))
        seen.push({ ...(m as object), at: performance.now() - started } as never);
      expect(seen[0]).toMatchObject({ type: 'taskCreated' });
      expect(seen[0]!.at).toBeLessThan(500);
      const taskId = seen[0]!.task!.taskId;
      expect(seen.at(-1)).toMatchObject({ type: 'result', result: { structuredContent: { deployment_uuid: expect.any(String) } } });
      expect(statuses).toContainEqual(expect.objectContaining({ taskId, status: 'completed' }));
      expect((await c.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(taskId);

      // The same task through `serve`'s HTTP door: another process, the same store.
      const h = new V1Client({ name: 'berth-test-v1', version: '1.0.0' });
      await h.connect(new V1HttpTransport(new URL('/mcp', s.url), { requestInit: { headers: { Authorization: `Bearer ${s.rootToken}` } } }));
      expect(await h.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'completed' });
      expect((await h.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).structuredContent).toEqual(seen.at(-1)!.result!.structuredContent);
      await h.close();
    } finally {
      await c.close();
    }
  }, 60_000);
});
