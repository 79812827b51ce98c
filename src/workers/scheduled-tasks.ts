import type { Schedule } from './scheduler.js';
import type { Logger } from 'pino';
import { lastDue } from '../core/frequency.js';
import { newUuid } from '../ids.js';
import type { Runtime } from '../core/runtime.js';
import { atomically } from '../store/atomic.js';
import { nowIso, type Db } from '../store/db.js';
import { endRun } from './job-audit.js';

/** The command output kept per execution (its tail). */
export const TASK_OUTPUT_CHARS = 100_000;

/** Executions kept per task; older ones are dropped after each run. */
export const TASK_EXECUTIONS_KEPT = 100;

/** A running execution older than its task's timeout plus this belongs to an instance that died. */
const ORPHAN_GRACE_MS = 60_000;

/**
 * Runs scheduled tasks (Coolify's ScheduledTask): on demand, and on their schedules from the jobs'
 * tick. A firing is claimed by a conditional update that moves the task's `last_due` forward to
 * the schedule time (one instance's update wins; the execution row is inserted in the same
 * transaction), so several berth instances on one store never run one firing twice. A schedule
 * missed while berth was down runs once, not once per missed slot. Each run is an execution row
 * first (running), then the command inside the resource's container, then its outcome.
 */
export class TaskRunner implements Schedule {
  readonly scheduleName = 'scheduled tasks';
  private readonly active = new Map<number, Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly runtime: Runtime,
    private readonly logger: Logger,
  ) {}

  private async insert(db: Db, taskId: number, scheduledFor: string | null): Promise<{ id: number; uuid: string }> {
    const uuid = newUuid();
    const now = nowIso();
    const row = await db
      .insertInto('scheduled_task_executions')
      .values({
        uuid,
        task_id: taskId,
        status: 'running',
        message: 'Task in progress.',
        logs: null,
        exit_code: null,
        scheduled_for: scheduledFor,
        started_at: now,
        finished_at: null,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: row.id, uuid };
  }

  /** Runs a task once now (in the background); the execution's uuid. */
  async runNow(taskId: number): Promise<string> {
    const e = await this.insert(this.db, taskId, null);
    this.start(e.id);
    return e.uuid;
  }

  private start(executionId: number): void {
    const done = this.run(executionId).finally(() => this.active.delete(executionId));
    this.active.set(executionId, done);
  }

  /** Runs a claimed execution to its end; never throws (the outcome is on the row). */
  private async run(executionId: number): Promise<void> {
    const t = await this.db
      .selectFrom('scheduled_task_executions as e')
      .innerJoin('scheduled_tasks as t', 't.id', 'e.task_id')
      .select(['t.id', 't.resource_id', 't.command', 't.container', 't.timeout'])
      .where('e.id', '=', executionId)
      .executeTakeFirst();
    if (!t) return;
    const finish = (v: { status: 'success' | 'failed'; message: string; logs: string | null; exit_code: number | null }) => this.finish(executionId, v);
    try {
      const out = await this.runtime.execCommand(t.resource_id, t.container, t.command, { signal: AbortSignal.timeout(t.timeout * 1000), maxChars: TASK_OUTPUT_CHARS });
      const ok = out.exitCode === 0;
      // Coolify's message is the command's output, trimmed, from its start (cut with its marker);
      // a failure that wrote nothing says its exit code. `logs` keeps the tail.
      const said = out.head.trim();
      await finish({
        status: ok ? 'success' : 'failed',
        message: ok || said ? said : `The command failed with exit code ${out.exitCode}.`,
        logs: out.output,
        exit_code: out.exitCode,
      });
    } catch (err) {
      const e = err as Error & { output?: string };
      const timedOut = ['TaskTimeoutError', 'TimeoutError', 'AbortError'].includes(e.name);
      const message = timedOut ? `The command did not finish within its timeout (${t.timeout} s) and was stopped.` : e.message;
      await finish({ status: 'failed', message, logs: e.output ?? null, exit_code: null }).catch((f: Error) =>
        this.logger.warn({ err: f.message, task: t.id }, 'could not record a scheduled task outcome'),
      );
    }
    await this.prune(t.id).catch((err: Error) => this.logger.warn({ err: err.message, task: t.id }, 'scheduled task execution pruning failed'));
  }

  /**
   * The run's one move out of `running`; a scheduled run's `job` entry in the same transaction,
   * so only the instance whose update took writes it (a run on demand is its call's entry).
   */
  private async finish(executionId: number, v: { status: 'success' | 'failed'; message: string; logs?: string | null; exit_code?: number | null }): Promise<void> {
    await endRun(this.db, this.logger, async (trx, audit) => {
      const r = await trx
        .updateTable('scheduled_task_executions')
        .set({ ...v, finished_at: nowIso(), updated_at: nowIso() })
        .where('id', '=', executionId)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n) return;
      const e = await trx
        .selectFrom('scheduled_task_executions as e')
        .innerJoin('scheduled_tasks as t', 't.id', 'e.task_id')
        .innerJoin('resources as r', 'r.id', 't.resource_id')
        .select(['e.uuid', 'e.scheduled_for', 'e.started_at', 't.uuid as task_uuid', 't.team_id', 'r.uuid as resource_uuid', 'r.kind'])
        .where('e.id', '=', executionId)
        .executeTakeFirst();
      // Its resource gone meanwhile, or run on demand: the outcome stays on the record alone.
      if (!e || e.scheduled_for === null) return;
      const singular = e.kind === 'service' ? 'service' : 'application';
      await audit({
        teamId: e.team_id,
        operation: `execute_${singular}_scheduled_task`,
        targets: [e.resource_uuid, e.task_uuid],
        recordUuid: e.uuid,
        schedule: { uuid: e.task_uuid, setBy: [`create_${singular}_scheduled_task`, `update_${singular}_scheduled_task`] },
        scheduledFor: e.scheduled_for,
        startedAt: e.started_at,
        ok: v.status === 'success',
      });
    });
  }

  private async prune(taskId: number): Promise<void> {
    const oldest = await this.db.selectFrom('scheduled_task_executions').select('id').where('task_id', '=', taskId).orderBy('id', 'desc').offset(TASK_EXECUTIONS_KEPT).limit(1).executeTakeFirst();
    if (oldest) await this.db.deleteFrom('scheduled_task_executions').where('task_id', '=', taskId).where('id', '<=', oldest.id).where('status', '!=', 'running').execute();
  }

  /** Fails runs whose instance died, then claims and starts every enabled task's latest due firing. */
  async tick(now = new Date()): Promise<void> {
    const running = await this.db
      .selectFrom('scheduled_task_executions as e')
      .innerJoin('scheduled_tasks as t', 't.id', 'e.task_id')
      .select(['e.id', 'e.started_at', 't.timeout'])
      .where('e.status', '=', 'running')
      .execute();
    for (const o of running) {
      if (this.active.has(o.id) || Date.parse(o.started_at) + o.timeout * 1000 + ORPHAN_GRACE_MS > now.getTime()) continue;
      await this.finish(o.id, { status: 'failed', message: 'berth stopped during this run; whether the command finished is unknown.' });
    }
    const tasks = await this.db.selectFrom('scheduled_tasks').select(['id', 'frequency', 'created_at', 'last_due']).where('enabled', '=', 1).execute();
    for (const t of tasks) {
      const due = lastDue(t.frequency, now)?.toISOString();
      // Only firings after the task was made, each once.
      if (!due || due <= t.created_at || (t.last_due !== null && due <= t.last_due)) continue;
      const claimed = await atomically(this.db, async (trx) => {
        const r = await trx
          .updateTable('scheduled_tasks')
          .set({ last_due: due })
          .where('id', '=', t.id)
          .where('enabled', '=', 1)
          .where((eb) => eb.or([eb('last_due', 'is', null), eb('last_due', '<', due)]))
          .executeTakeFirst();
        return r.numUpdatedRows > 0n ? this.insert(trx, t.id, due) : null;
      });
      if (claimed) this.start(claimed.id);
    }
  }

  /** Waits for the runs this instance started. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.active.values()]);
  }
}
