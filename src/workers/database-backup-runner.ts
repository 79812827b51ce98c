import type { Logger } from 'pino';
import { lastDue } from '../core/frequency.js';
import type { Runtime } from '../core/runtime.js';
import { newUuid } from '../ids.js';
import { nowIso, type Db } from '../store/db.js';
import { endRun } from './job-audit.js';
import type { Schedule } from './scheduler.js';

/** A running execution older than its backup's timeout plus this belongs to an instance that died. */
const ORPHAN_GRACE_MS = 60_000;

/** How a restore ended: ok, or why not; the restore tool's output. */
export interface RestoreOutcome {
  ok: boolean;
  message: string;
  logs: string;
}

/** The largest tool output kept per execution. */
const MAX_LOG_CHARS = 200_000;

/**
 * Runs backup executions (on demand and scheduled) and applies retention. A run is an execution
 * row first, status running; the outcome is written once, success only when a non-empty file was
 * written. Scheduled runs are claimed by inserting the execution with its schedule time: the
 * unique (backup, scheduled_for) pair lets exactly one of several berth instances run it.
 */
export class BackupRunner implements Schedule {
  readonly scheduleName = 'database backups';
  private readonly active = new Map<number, Promise<void>>();
  private readonly restoring = new Map<number, Promise<RestoreOutcome>>();

  constructor(
    private readonly db: Db,
    private readonly runtime: Runtime,
    private readonly logger: Logger,
  ) {}

  /** Inserts a running execution; null when another instance already claimed this schedule time. */
  async claim(backupId: number, scheduledFor: string | null): Promise<number | null> {
    const now = nowIso();
    try {
      const row = await this.db
        .insertInto('scheduled_database_backup_executions')
        .values({ uuid: newUuid(), backup_id: backupId, status: 'running', message: 'Backup in progress.', scheduled_for: scheduledFor, local_storage_deleted: 0, created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    } catch (err) {
      if (scheduledFor && /unique|duplicate/i.test((err as Error).message)) return null;
      throw err;
    }
  }

  /** Runs a claimed execution in the background; `done` resolves when its outcome is recorded. */
  start(executionId: number): { done: Promise<void> } {
    const done = this.run(executionId).finally(() => this.active.delete(executionId));
    this.active.set(executionId, done);
    return { done };
  }

  private async run(executionId: number): Promise<void> {
    const e = await this.db
      .selectFrom('scheduled_database_backup_executions as e')
      .innerJoin('scheduled_database_backups as b', 'b.id', 'e.backup_id')
      .select(['b.timeout', 'b.id as backup_id', 'b.resource_id'])
      .where('e.id', '=', executionId)
      .executeTakeFirst();
    if (!e) return;
    const finish = (v: { status: 'success' | 'failed'; message: string; logs: string; filename?: string | null; size?: number | null; database_name?: string | null }) =>
      this.finish(executionId, { ...v, logs: v.logs.slice(-MAX_LOG_CHARS) });
    try {
      const out = await this.runtime.runBackup(executionId, AbortSignal.timeout(e.timeout * 1000));
      await finish({ status: 'success', message: 'Backup completed.', logs: out.logs, filename: out.filename, size: out.size, database_name: out.databaseName });
      await this.retain(e.backup_id).catch((err: Error) => this.logger.warn({ err: err.message, backup: e.backup_id }, 'backup retention failed'));
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
      const message = timedOut ? `The backup did not finish within its timeout (${e.timeout} s) and was stopped.` : (err as Error).message;
      await finish({ status: 'failed', message, logs: (err as Error & { logs?: string }).logs ?? message }).catch(() => undefined);
    }
  }

  /**
   * The run's one move out of `running`; a scheduled run's `job` entry in the same transaction,
   * so only the instance whose update took writes it (a run on demand is its call's entry).
   */
  private async finish(
    executionId: number,
    v: { status: 'success' | 'failed'; message: string; logs?: string; filename?: string | null; size?: number | null; database_name?: string | null },
  ): Promise<void> {
    await endRun(this.db, this.logger, async (trx, audit) => {
      const r = await trx
        .updateTable('scheduled_database_backup_executions')
        .set({ ...v, finished_at: nowIso(), updated_at: nowIso() })
        .where('id', '=', executionId)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n) return;
      const e = await trx
        .selectFrom('scheduled_database_backup_executions as e')
        .innerJoin('scheduled_database_backups as b', 'b.id', 'e.backup_id')
        .innerJoin('resources as r', 'r.id', 'b.resource_id')
        .select(['e.uuid', 'e.scheduled_for', 'e.created_at', 'b.uuid as backup_uuid', 'b.team_id', 'r.uuid as resource_uuid'])
        .where('e.id', '=', executionId)
        .executeTakeFirst();
      // Its resource gone meanwhile, or run on demand: the outcome stays on the record alone.
      if (!e || e.scheduled_for === null) return;
      await audit({
        teamId: e.team_id,
        operation: 'run_database_backup',
        targets: [e.resource_uuid, e.backup_uuid],
        recordUuid: e.uuid,
        schedule: { uuid: e.backup_uuid, setBy: ['create_database_backup', 'update_database_backup'] },
        scheduledFor: e.scheduled_for,
        startedAt: e.created_at,
        ok: v.status === 'success',
      });
    });
  }

  /**
   * Applies the backup's local retention after a successful run: keeps the newest
   * `amount` (0: all), drops those older than `days` (0: none), and drops the oldest while the
   * total is over `max storage` GB (0: no limit). The newest successful file always stays.
   * Files go from the volume first; rows whose file could not be removed stay.
   */
  async retain(backupId: number): Promise<void> {
    const b = await this.db.selectFrom('scheduled_database_backups').selectAll().where('id', '=', backupId).executeTakeFirst();
    if (!b) return;
    const rows = await this.db
      .selectFrom('scheduled_database_backup_executions')
      .select(['id', 'filename', 'size', 'created_at'])
      .where('backup_id', '=', backupId)
      .where('status', '=', 'success')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    const amount = b.database_backup_retention_amount_locally;
    const days = b.database_backup_retention_days_locally;
    const maxBytes = b.database_backup_retention_max_storage_locally * 1024 ** 3;
    const cutoff = days > 0 ? Date.now() - days * 86_400_000 : null;
    let total = 0;
    const drop = rows.filter((r, i) => {
      total += Number(r.size ?? 0);
      if (i === 0) return false;
      if (amount > 0 && i >= amount) return true;
      if (cutoff !== null && Date.parse(r.created_at) < cutoff) return true;
      return maxBytes > 0 && total > maxBytes;
    });
    if (!drop.length) return;
    await this.runtime.removeBackupFiles(
      b.resource_id,
      drop.map((r) => r.filename).filter((f): f is string => !!f),
    );
    await this.db
      .deleteFrom('scheduled_database_backup_executions')
      .where(
        'id',
        'in',
        drop.map((r) => r.id),
      )
      .execute();
  }

  /** Claims and starts every scheduled run that is due; fails runs whose instance died. */
  async tick(now = new Date()): Promise<void> {
    const orphans = await this.db
      .selectFrom('scheduled_database_backup_executions as e')
      .innerJoin('scheduled_database_backups as b', 'b.id', 'e.backup_id')
      .select(['e.id', 'e.created_at', 'b.timeout'])
      .where('e.status', '=', 'running')
      .execute();
    for (const o of orphans) {
      if (this.active.has(o.id) || Date.parse(o.created_at) + o.timeout * 1000 + ORPHAN_GRACE_MS > now.getTime()) continue;
      await this.finish(o.id, { status: 'failed', message: 'berth stopped during this backup; its file, if any, is incomplete. Run the backup again.' });
    }
    // Restores by the same rule: one running past its timeout and grace, and not this instance's, lost its instance.
    const restores = await this.db
      .selectFrom('scheduled_database_backup_executions as e')
      .innerJoin('scheduled_database_backups as b', 'b.id', 'e.backup_id')
      .select(['e.id', 'e.restore_started_at', 'b.timeout'])
      .where('e.restore_status', '=', 'running')
      .execute();
    for (const o of restores) {
      if (this.restoring.has(o.id) || Date.parse(o.restore_started_at ?? '') + o.timeout * 1000 + ORPHAN_GRACE_MS > now.getTime()) continue;
      await this.endRestore(o.id, { ok: false, message: 'berth stopped during this restore; the database may hold part of the dump. Restore again.' });
    }
    const backups = await this.db.selectFrom('scheduled_database_backups').select(['id', 'frequency', 'created_at']).where('enabled', '=', 1).execute();
    for (const b of backups) {
      const due = lastDue(b.frequency, now);
      if (!due || due.getTime() <= Date.parse(b.created_at)) continue;
      const id = await this.claim(b.id, due.toISOString());
      if (id !== null) this.start(id);
    }
  }

  /**
   * Claims a restore of an execution's file: its row says running from now on. False when a
   * restore of it runs already (one at a time: two would drop and load the same objects at once).
   */
  async claimRestore(executionId: number): Promise<boolean> {
    const now = nowIso();
    const r = await this.db
      .updateTable('scheduled_database_backup_executions')
      .set({ restore_status: 'running', restore_message: 'Restore in progress.', restore_logs: null, restore_started_at: now, restore_finished_at: null, updated_at: now })
      .where('id', '=', executionId)
      .where((eb) => eb.or([eb('restore_status', 'is', null), eb('restore_status', '!=', 'running')]))
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  /**
   * Runs a claimed restore in the background of this process, not of the call that asked (which
   * answers within its bound): its outcome goes on the execution's row; `done` settles with it.
   */
  startRestore(executionId: number, o: { timeoutS: number; okMessage: string }): { done: Promise<RestoreOutcome> } {
    const done = this.restore(executionId, o).finally(() => this.restoring.delete(executionId));
    this.restoring.set(executionId, done);
    return { done };
  }

  /** `okMessage`: what a restore that ended well did (a record-only server's restored nothing). */
  private async restore(executionId: number, { timeoutS, okMessage }: { timeoutS: number; okMessage: string }): Promise<RestoreOutcome> {
    let out: RestoreOutcome;
    try {
      const { logs } = await this.runtime.restoreBackup(executionId, AbortSignal.timeout(timeoutS * 1000));
      out = { ok: true, message: okMessage, logs };
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
      const message = timedOut ? `The restore did not finish within the backup's timeout (${timeoutS} s) and was stopped.` : (err as Error).message;
      out = { ok: false, message, logs: (err as Error & { logs?: string }).logs ?? message };
    }
    await this.endRestore(executionId, out).catch((err: Error) => this.logger.warn({ err: err.message, execution: executionId }, 'restore outcome not recorded'));
    return out;
  }

  /** A restore's one move out of `running`. */
  private async endRestore(executionId: number, o: Omit<RestoreOutcome, 'logs'> & { logs?: string }): Promise<void> {
    await this.db
      .updateTable('scheduled_database_backup_executions')
      .set({
        restore_status: o.ok ? 'success' : 'failed',
        restore_message: o.message,
        ...(o.logs === undefined ? {} : { restore_logs: o.logs.slice(-MAX_LOG_CHARS) }),
        restore_finished_at: nowIso(),
        updated_at: nowIso(),
      })
      .where('id', '=', executionId)
      .where('restore_status', '=', 'running')
      .execute();
  }

  /** Waits for the runs and restores this instance started. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.active.values(), ...this.restoring.values()]);
  }
}
