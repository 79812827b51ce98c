import { z } from 'zod';
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type Server,
  type ServerCapabilities,
} from '@modelcontextprotocol/server';
import type { Caller } from '../../core/caller.js';
import type { Operation } from '../../core/operation.js';
import { POLL_INTERVAL_MS, type McpTaskRunner, type TaskCallOptions } from './runner.js';
import type { TaskError, TaskRow } from './store.js';

/** The 2026-07-28 era's tasks extension (SEP-2663). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/**
 * Which tools may run as a task, decided in this one place: every operation that changes
 * something beyond berth's store (annotations openWorld and not readOnly: start, stop, restart,
 * deploy, migrate, backups and restores, builds, cleanups, scheduled-task runs, ...) waits on an
 * engine or a job, so a client may ask for it as a task ("optional"). Reads and store-only
 * changes answer at once: "forbidden". No tool requires a task.
 */
export function taskSupport(op: Pick<Operation, 'annotations'>): 'optional' | 'forbidden' {
  return op.annotations.openWorld && !op.annotations.readOnly ? 'optional' : 'forbidden';
}

/** What a session's tasks need: the process's runner, and the caller whose tasks these are. */
export interface TaskSession {
  runner: McpTaskRunner;
  /** The caller of this request (over stdio: the session's token, checked anew). */
  owner(): Promise<Caller>;
  /**
   * The connection outlives the request (stdio): a 2025-era client is sent
   * notifications/tasks/status when its task ends. Stateless HTTP has no stream left to send on.
   */
  notifies?: boolean;
}

/** What a request says of its era: a 2026-era one carries its envelope. */
type Envelope = Record<string, unknown> | undefined;

const isModern = (envelope: Envelope) => envelope?.[PROTOCOL_VERSION_META_KEY] !== undefined;
/** The client declared the extension on this request (2026 era: capabilities ride each request). */
const declaresExtension = (envelope: Envelope) => {
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  return caps?.extensions?.[TASKS_EXTENSION] !== undefined;
};

/** The tasks capabilities (both eras) and the 2026 extension. */
const TASK_CAPABILITIES: ServerCapabilities = { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } }, extensions: { [TASKS_EXTENSION]: {} } };

/** What a tools/call's task decision reads of the call (tool-session.ts). */
export interface TaskDoor {
  taskCall(
    params: { name: string; task?: unknown },
    ctx: { envelope?: Envelope },
    op: Pick<Operation, 'annotations'> | undefined,
    call: (options: TaskCallOptions) => Promise<CallToolResult>,
  ): Promise<Record<string, unknown> | undefined>;
}

/** Another token's task, an expired one and a missing one: one answer. */
const notFound = () => new ProtocolError(ProtocolErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');

const taskIdOf = (params: Record<string, unknown>): string => {
  if (typeof params.taskId !== 'string' || !params.taskId) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid params: taskId must be a string');
  return params.taskId;
};

/** What a task says on either wire, before the era's names for its durations. */
function taskFields(row: TaskRow) {
  return {
    taskId: row.task_id,
    status: row.status,
    ...(row.status_message ? { statusMessage: row.status_message } : {}),
    createdAt: row.created_at,
    lastUpdatedAt: row.updated_at,
  };
}

/** A task on the 2025-11-25 wire (Task). */
export const legacyTask = (row: TaskRow) => ({ ...taskFields(row), ttl: Number(row.ttl_ms), pollInterval: POLL_INTERVAL_MS });

/** A task on the 2026-07-28 wire (SEP-2663: flat, durations in ...Ms). */
const modernTask = (row: TaskRow) => ({ ...taskFields(row), ttlMs: Number(row.ttl_ms), pollIntervalMs: POLL_INTERVAL_MS });

/** tasks/get in the 2026 era: the task, with its result or its error inlined once it ended. */
function detailedTask(row: TaskRow) {
  return {
    ...modernTask(row),
    ...(row.status === 'completed' && row.result ? { result: JSON.parse(row.result) as CallToolResult } : {}),
    ...(row.status === 'failed' && row.error ? { error: JSON.parse(row.error) as TaskError } : {}),
  };
}

const anyParams = { params: z.looseObject({}) };

/**
 * The tasks methods on one SDK server (both eras: the SDK's era gate keeps tasks/result and
 * tasks/list to 2025, tasks/update is reached only as the extension's), and the decision a
 * tools/call takes (taskCall). Registered with explicit schemas: the 2026 era reaches tasks/get
 * and tasks/cancel only so.
 */
export function installTasks(s: Server, tasks: TaskSession): TaskDoor {
  s.registerCapabilities(TASK_CAPABILITIES);
  const { runner } = tasks;
  /** 2026 era: a client that did not declare the extension is refused before any lookup (-32021). */
  const gate = (envelope: Envelope) => {
    if (isModern(envelope) && !declaresExtension(envelope)) throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
  };
  const find = async (taskId: string) => (await runner.store.get(await tasks.owner(), taskId)) ?? Promise.reject(notFound());

  s.setRequestHandler('tasks/get', anyParams, async (params, ctx) => {
    gate(ctx.mcpReq.envelope);
    const row = await find(taskIdOf(params));
    return isModern(ctx.mcpReq.envelope) ? detailedTask(row) : legacyTask(row);
  });
  s.setRequestHandler('tasks/update', anyParams, async (params, ctx) => {
    gate(ctx.mcpReq.envelope);
    // berth's tools ask nothing of a task's client today: an update is acknowledged.
    await find(taskIdOf(params));
    return {};
  });
  s.setRequestHandler('tasks/cancel', anyParams, async (params, ctx) => {
    gate(ctx.mcpReq.envelope);
    const owner = await tasks.owner();
    const taskId = taskIdOf(params);
    const r = await runner.cancel(owner, taskId);
    if (!r) throw notFound();
    // 2026: an acknowledgement, the same for a task that had ended. 2025: the task, and a
    // task that had ended cannot be cancelled (-32602).
    if (isModern(ctx.mcpReq.envelope)) return {};
    if (r === 'terminal') {
      const row = await find(taskId);
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Cannot cancel task: it is already ${row.status}`);
    }
    return legacyTask(r);
  });
  s.setRequestHandler('tasks/result', anyParams, async (params, ctx) => {
    const owner = await tasks.owner();
    const taskId = taskIdOf(params);
    const row = await runner.ended(owner, taskId, ctx.mcpReq.signal);
    if (!row) throw notFound();
    const related = { [RELATED_TASK_META_KEY]: { taskId } };
    if (row.status === 'completed' && row.result) {
      const result = JSON.parse(row.result) as CallToolResult;
      return { ...result, _meta: { ...result._meta, ...related } };
    }
    if (row.status === 'failed' && row.error) {
      const e = JSON.parse(row.error) as TaskError;
      throw new ProtocolError(e.code, e.message, e.data);
    }
    if (row.status === 'cancelled') throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'The task was cancelled; it has no result.');
    // The client went away before the task ended.
    throw new ProtocolError(ProtocolErrorCode.InternalError, `The task is still ${row.status}.`);
  });
  s.setRequestHandler('tasks/list', anyParams, async (params) => {
    const owner = await tasks.owner();
    if (params.cursor !== undefined && typeof params.cursor !== 'string') throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
    const page = await runner.store.list(owner, params.cursor as string | undefined, LIST_PAGE);
    if (!page) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
    const last = page.rows.at(-1);
    return { tasks: page.rows.map(legacyTask), ...(page.more && last ? { nextCursor: last.task_id } : {}) };
  });

  /**
   * What a tools/call is: undefined when it runs as a plain call; else the answer to send now
   * (its task, made and started), or a thrown refusal. 2025: the client asked (params.task) and
   * the tool allows it; a tool that does not is -32601. 2026: the client declared the extension
   * on this request and the tool allows it (the server decides; a legacy task param is ignored).
   */
  const taskCall: TaskDoor['taskCall'] = async (params, ctx, op, call) => {
    const supported = op !== undefined && taskSupport(op) === 'optional';
    const modern = isModern(ctx.envelope);
    if (modern ? !(supported && declaresExtension(ctx.envelope)) : params.task === undefined) return undefined;
    if (!supported) throw new ProtocolError(ProtocolErrorCode.MethodNotFound, `Tool ${params.name} does not support task-augmented calls`);
    const owner = await tasks.owner();
    const onEnd = tasks.notifies && !modern ? (row: TaskRow) => void s.notification({ method: 'notifications/tasks/status', params: legacyTask(row) }).catch(() => undefined) : undefined;
    const asked = params.task;
    const ttl = typeof asked === 'object' && asked !== null && 'ttl' in asked ? asked.ttl : undefined;
    const row = await runner.create(owner, params.name, runner.ttlFor(modern ? undefined : ttl), call, onEnd);
    return modern ? { resultType: 'task', ...modernTask(row) } : { task: legacyTask(row) };
  };
  return { taskCall };
}

const LIST_PAGE = 50;
