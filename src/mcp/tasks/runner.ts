import type { Logger } from 'pino';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Caller } from '../../core/caller.js';
import type { Core } from '../../core/gate.js';
import type { CallOptions, StartedJob } from '../../core/operation.js';
import { operations } from '../../core/operations/index.js';
import { Periodic } from '../../workers/periodic.js';
import { isTerminal, TaskStore, type TaskError, type TaskOwner, type TaskRow } from './store.js';
import { randomUUID } from 'node:crypto';

/** What a task's call gets instead of its request's: its own signal, no deadline, and the hook that records its job. */
export type TaskCallOptions = Required<Pick<CallOptions, 'signal' | 'answerWithinMs' | 'onJob'>>;

/** How often a client is told to poll (ms): a second keeps a finished call's wait short. */
export const POLL_INTERVAL_MS = 1_000;
/** How often tasks/result looks at a task running on another instance (ms). */
const WAIT_POLL_MS = 250;

export interface TaskRunnerOptions {
  /** The lease a running task's instance holds and renews every third of (BERTH_JOB_LEASE_MS). */
  leaseMs: number;
  ttlMs: number;
  maxTtlMs: number;
}

const CANCEL_OP = { deployment: operations.find((o) => o.name === 'cancel_deployment')!, migration: operations.find((o) => o.name === 'cancel_migration')! };

/**
 * The MCP tasks of one process (both transports, both eras): makes a task, runs its call in the
 * background past the request that asked (never touching that request again), and ends it with
 * what the call answered. Ticks every third of a lease: renews the leases of its running tasks,
 * aborts the ones ended elsewhere (cancelled through another instance), fails the tasks of
 * instances that stopped renewing, and removes the tasks whose ttl has passed.
 */
export class McpTaskRunner extends Periodic {
  readonly store: TaskStore;
  private readonly instanceId = randomUUID();
  /** Tasks running in this process: their abort, and their end. */
  private readonly local = new Map<number, { abort: AbortController; ended: Promise<void> }>();

  constructor(
    private readonly core: Core,
    private readonly opts: TaskRunnerOptions,
    logger: Logger,
  ) {
    super(logger, Math.max(250, Math.floor(opts.leaseMs / 3)), 'mcp task leases');
    this.store = new TaskStore(core.deps.db);
  }

  start(): void {
    this.schedule();
  }

  async tick(): Promise<void> {
    const ended = await this.store.renew(this.instanceId, Date.now() + this.opts.leaseMs, [...this.local.keys()]);
    for (const id of ended) this.local.get(id)?.abort.abort(new Error('The task was cancelled.'));
    const failed = await this.store.failLapsed();
    if (failed) this.logger.warn({ tasks: failed }, 'MCP tasks of a stopped berth instance ended failed');
    await this.store.sweepExpired();
  }

  /** The ttl a task gets: the client's ask within the maximum, or the default. */
  ttlFor(asked: unknown): number {
    return typeof asked === 'number' && Number.isFinite(asked) && asked > 0 ? Math.min(Math.floor(asked), this.opts.maxTtlMs) : this.opts.ttlMs;
  }

  /**
   * Makes a task and starts its call; answers as soon as the task is recorded. `call` runs the
   * tool as a plain call would (same checks, approvals, audit) and answers its CallToolResult;
   * a thrown ProtocolError ends the task failed with that error. `onEnd` hears the ended task.
   */
  async create(owner: Caller, tool: string, ttlMs: number, call: (options: TaskCallOptions) => Promise<CallToolResult>, onEnd?: (row: TaskRow) => void): Promise<TaskRow> {
    const row = await this.store.create(owner, tool, ttlMs, { owner: this.instanceId, until: Date.now() + this.opts.leaseMs });
    const abort = new AbortController();
    const onJob = (job: StartedJob) => {
      void this.store.setJob(row.id, job).then(async (now) => {
        // Cancelled before its job was queued: the job goes with it.
        if (now?.status === 'cancelled') await this.cancelJob(owner, job);
      });
    };
    const ended = (async () => {
      let end: { status: 'completed'; result: unknown } | { status: 'failed'; error: TaskError };
      try {
        end = { status: 'completed', result: await call({ signal: abort.signal, answerWithinMs: Infinity, onJob }) };
      } catch (err) {
        const e =
          err instanceof ProtocolError ? { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) } : { code: -32603, message: 'The call failed inside berth.' };
        if (!(err instanceof ProtocolError)) this.logger.error({ err, tool }, 'MCP task call failed');
        end = { status: 'failed', error: e };
      }
      if (await this.store.finish(row.id, end)) {
        const done = await this.store.get(owner, row.task_id).catch(() => undefined);
        if (done) onEnd?.(done);
      }
    })()
      .catch((err: unknown) => this.logger.error({ err, taskId: row.task_id }, 'MCP task could not be ended'))
      .finally(() => this.local.delete(row.id));
    this.local.set(row.id, { abort, ended });
    return row;
  }

  /**
   * Cancels the owner's task, and the deployment or migration it started (through cancel_deployment
   * or cancel_migration, as the token would); 'terminal' when it had ended, undefined when it is
   * not the owner's.
   */
  async cancel(owner: Caller, taskId: string): Promise<TaskRow | 'terminal' | undefined> {
    const row = await this.store.cancel(owner, taskId);
    if (!row || row === 'terminal') return row;
    this.local.get(row.id)?.abort.abort(new Error('The task was cancelled.'));
    if (row.job_kind && row.job_uuid) await this.cancelJob(owner, { kind: row.job_kind, uuid: row.job_uuid });
    return row;
  }

  private async cancelJob(owner: Caller, job: StartedJob): Promise<void> {
    try {
      await this.core.run(CANCEL_OP[job.kind], owner, { uuid: job.uuid });
    } catch (err) {
      // Ended already (a conflict): nothing left to cancel.
      this.logger.debug({ err: (err as Error).message, job }, 'the job of a cancelled MCP task was not cancelled');
    }
  }

  /** The owner's task once it has ended (tasks/result), or undefined when it is not the owner's (or is swept meanwhile). */
  async ended(owner: TaskOwner, taskId: string, signal?: AbortSignal): Promise<TaskRow | undefined> {
    for (;;) {
      const row = await this.store.get(owner, taskId);
      if (!row || isTerminal(row.status) || signal?.aborted) return row;
      // Woken by the call's end when it runs here; else the row is read again shortly (another instance runs it).
      const local = this.local.get(row.id);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(t);
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        const t = setTimeout(wake, WAIT_POLL_MS);
        void local?.ended.then(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }
}
