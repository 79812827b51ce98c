import type { Logger } from 'pino';
import { lastDue } from '../core/frequency.js';
import { newUuid } from '../ids.js';
import type { Runtime } from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import { endRun } from './job-audit.js';
import type { VolumeBackupSettings } from '../core/model/volume-backup.js';
import type { Schedule } from './scheduler.js';

const MAX_LOG_CHARS = 100_000;

/**
 * Runs volume backups, on demand and on their schedules: each run is an execution row first
 * (claimed once per due time across instances), then a tar.gz of the volume in the resource's
 * backup volume, then local retention. With stop_during_backup the resource is stopped for the
 * archive and started again after, whatever the outcome.
 */
export class VolumeBackupRunner implements Schedule {
  readonly scheduleName = 'volume backups';

  constructor(
    private readonly db: Db,
    private readonly runtime: Runtime,
    private readonly logger: Logger,
  ) {}

  /** Runs cut off by a stop or a crash (a backup's timeout is at most 10 hours) are failed. */
  async recover(): Promise<void> {
    await this.db
      .updateTable('scheduled_volume_backup_executions')
      .set({ status: 'failed', message: 'berth stopped while this backup ran.', finished_at: nowIso(), updated_at: nowIso() })
      .where('status', '=', 'running')
      .where('created_at', '<', new Date(Date.now() - 11 * 3_600_000).toISOString())
      .execute();
  }

  async claim(backupId: number, scheduledFor: string | null): Promise<{ id: number; uuid: string } | null> {
    const uuid = newUuid();
    const row = await this.db
      .insertInto('scheduled_volume_backup_executions')
      .values({
        uuid,
        backup_id: backupId,
        status: 'running',
        message: 'Backup in progress.',
        logs: null,
        size: null,
        filename: null,
        scheduled_for: scheduledFor,
        finished_at: null,
        created_at: nowIso(),
        updated_at: nowIso(),
      })
      .onConflict((oc) => oc.columns(['backup_id', 'scheduled_for']).doNothing())
      .returning('id')
      .executeTakeFirst();
    return row ? { id: row.id, uuid } : null;
  }

  /** Runs a claimed execution to its end; never throws (the outcome is on the row). */
  async run(executionId: number): Promise<void> {
    const e = await this.db
      .selectFrom('scheduled_volume_backup_executions as e')
      .innerJoin('scheduled_volume_backups as b', 'b.id', 'e.backup_id')
      .innerJoin('storages as s', 's.id', 'b.storage_id')
      .innerJoin('resources as r', 'r.id', 's.resource_id')
      .select([
        'e.created_at',
        'e.uuid',
        'e.scheduled_for',
        'b.id as backup_id',
        'b.settings',
        'b.storage_id',
        's.uuid as storage_uuid',
        'r.id as resource_id',
        'r.uuid as resource_uuid',
        'r.kind',
        'r.team_id',
        'r.status',
      ])
      .where('e.id', '=', executionId)
      .executeTakeFirst();
    if (!e) return;
    const settings = JSON.parse(e.settings) as VolumeBackupSettings;
    const finish = (v: { status: 'success' | 'failed'; message: string; logs: string; filename?: string; size?: number }) =>
      endRun(this.db, this.logger, async (trx, audit) => {
        const r = await trx
          .updateTable('scheduled_volume_backup_executions')
          .set({ ...v, logs: v.logs.slice(-MAX_LOG_CHARS), finished_at: nowIso(), updated_at: nowIso() })
          .where('id', '=', executionId)
          .where('status', '=', 'running')
          .executeTakeFirst();
        // The run's one move out of `running` carries a scheduled run's `job` entry (on demand: its call's entry).
        if (r.numUpdatedRows === 0n || e.scheduled_for === null) return;
        const singular = e.kind === 'application' ? 'application' : e.kind === 'service' ? 'service' : 'database';
        await audit({
          teamId: e.team_id,
          operation: `run_${singular}_storage_backup`,
          targets: [e.resource_uuid, e.storage_uuid],
          recordUuid: e.uuid,
          schedule: { uuid: e.storage_uuid, setBy: [`update_${singular}_storage_backup`] },
          scheduledFor: e.scheduled_for,
          startedAt: e.created_at,
          ok: v.status === 'success',
        });
      });
    const signal = AbortSignal.timeout(settings.timeout * 1000);
    const restart = settings.stop_during_backup && e.status === 'running';
    let outcome: Parameters<typeof finish>[0];
    try {
      if (restart) await this.runtime.stopResource(e.resource_id, signal);
      const out = await this.runtime.runVolumeBackup(e.storage_id, new Date(e.created_at), signal);
      outcome = { status: 'success', message: 'Backup completed.', logs: out.logs, filename: out.filename, size: out.size };
    } catch (err) {
      const message = (err as Error).name === 'TimeoutError' ? `The backup did not finish within its timeout (${settings.timeout} s).` : (err as Error).message;
      outcome = { status: 'failed', message, logs: (err as Error & { logs?: string }).logs ?? message };
    }
    // The run ends only once the resource runs again: a caller who sees the execution end finds its app up.
    if (restart)
      await this.runtime.startResource(e.resource_id).catch((err: Error) => {
        this.logger.error({ err: err.message, resource: e.resource_id }, 'could not start a resource again after its volume backup');
        outcome.message += ` Starting the ${e.kind} again failed: ${err.message}`;
      });
    await finish(outcome).catch(() => undefined);
    if (outcome.status === 'success') await this.retain(e.backup_id, settings).catch((err: Error) => this.logger.warn({ err: err.message, backup: e.backup_id }, 'volume backup retention failed'));
  }

  /** Keeps the newest `retention_amount_locally` archives (0: all) and drops older ones than `retention_days_locally`. */
  private async retain(backupId: number, s: VolumeBackupSettings): Promise<void> {
    const rows = await this.db
      .selectFrom('scheduled_volume_backup_executions as e')
      .innerJoin('scheduled_volume_backups as b', 'b.id', 'e.backup_id')
      .innerJoin('storages as st', 'st.id', 'b.storage_id')
      .select(['e.id', 'e.filename', 'e.size', 'e.created_at', 'st.resource_id'])
      .where('e.backup_id', '=', backupId)
      .where('e.status', '=', 'success')
      .orderBy('e.id', 'desc')
      .execute();
    const cutoff = s.retention_days_locally > 0 ? Date.now() - s.retention_days_locally * 86_400_000 : null;
    const maxBytes = s.retention_max_storage_locally * 1024 ** 3;
    let total = 0;
    const drop = rows.filter((r, i) => {
      total += Number(r.size ?? 0);
      if (i === 0) return false;
      return (s.retention_amount_locally > 0 && i >= s.retention_amount_locally) || (cutoff !== null && Date.parse(r.created_at) < cutoff) || (maxBytes > 0 && total > maxBytes);
    });
    if (!drop.length) return;
    await this.runtime.removeBackupFiles(
      rows[0]!.resource_id,
      drop.map((r) => r.filename).filter((f): f is string => !!f),
    );
    await this.db
      .deleteFrom('scheduled_volume_backup_executions')
      .where(
        'id',
        'in',
        drop.map((r) => r.id),
      )
      .execute();
  }

  /** Claims and runs each enabled schedule's latest due slot (once across instances). */
  async tick(now = new Date()): Promise<void> {
    const schedules = await this.db.selectFrom('scheduled_volume_backups').select(['id', 'settings', 'created_at']).execute();
    for (const b of schedules) {
      const s = JSON.parse(b.settings) as VolumeBackupSettings;
      if (!s.enabled) continue;
      const due = lastDue(s.frequency, now);
      if (!due || due.toISOString() <= b.created_at) continue;
      const claimed = await this.claim(b.id, due.toISOString());
      if (claimed) await this.run(claimed.id);
    }
  }
}
