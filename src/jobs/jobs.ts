import type { Logger } from 'pino';
import type { MigrationProgress, Runtime } from '../core/runtime.js';
import type { JobQueues } from '../limits/job-queues.js';
import { nowIso, type Db } from '../store/db.js';

/** The largest deployment log kept; older lines are dropped first. */
const MAX_LOG_CHARS = 1_000_000;

/**
 * Runs deployments (deploy, start, stop, restart) through the per-server queues. A deployment is
 * a row first (queued), so a restart finds what was waiting; a row found in progress at start
 * was cut off by a crash and is marked failed, never reported as done.
 */
export class Jobs {
  private readonly running = new Map<number, AbortController>();
  private readonly migrationListeners = new Map<number, Set<(p: MigrationProgress) => void>>();

  constructor(
    private readonly db: Db,
    private readonly queues: JobQueues,
    private readonly runtime: Runtime,
    private readonly logger: Logger,
  ) {}

  /**
   * Resumes after a restart: cut-off deployments fail, queued ones are queued again, and
   * migrations that were waiting or copying continue (volumes already verified are kept).
   */
  async start(): Promise<void> {
    const migrations = await this.db
      .selectFrom('migrations_jobs as m')
      .innerJoin('destinations as d', 'd.id', 'm.to_destination_id')
      .select(['m.id', 'd.server_id'])
      .where('m.status', 'in', ['pending', 'copying'])
      .orderBy('m.id')
      .execute();
    for (const m of migrations) {
      await this.enqueueMigration(m.id, m.server_id).catch(async (err: Error) => {
        // Not resumable now (e.g. the target's queue is full): roll back rather than leave the
        // resource blocked as migrating. Its source volumes were never touched; a re-run is safe.
        this.logger.error({ err, migrationId: m.id }, 'could not resume a migration; rolling it back');
        await this.failMigration(m.id, `Could not be resumed after a restart: ${err.message}`);
      });
    }
    const cut = await this.db
      .updateTable('deployments')
      .set({ status: 'failed', finished_at: nowIso(), updated_at: nowIso() })
      .where('status', '=', 'in_progress')
      .executeTakeFirst();
    if (cut.numUpdatedRows > 0n) this.logger.warn({ count: Number(cut.numUpdatedRows) }, 'deployments cut off by a restart marked failed');
    const queued = await this.db.selectFrom('deployments').select(['id', 'server_id']).where('status', '=', 'queued').orderBy('id').execute();
    for (const d of queued) await this.enqueue(d.id, d.server_id).catch((err) => this.logger.error({ err, deploymentId: d.id }, 'could not requeue'));
  }

  /** Puts a deployment on its server's queue; 429 "Deployment queue is full." when it is. */
  async enqueue(deploymentId: number, serverId: number): Promise<void> {
    const { done } = await this.queues.submit(String(serverId), () => this.run(deploymentId));
    done.catch((err) => this.logger.error({ err, deploymentId }, 'deployment job failed'));
  }

  /**
   * Queues a migration's volume transfer on the target server's queue. `done` settles when the
   * migration has finished or failed; `onProgress` hears every progress update.
   */
  async enqueueMigration(migrationId: number, serverId: number, onProgress?: (p: MigrationProgress) => void): Promise<{ done: Promise<void> }> {
    if (onProgress) {
      let set = this.migrationListeners.get(migrationId);
      if (!set) this.migrationListeners.set(migrationId, (set = new Set()));
      set.add(onProgress);
    }
    const { done } = await this.queues.submit(String(serverId), () => this.runMigration(migrationId));
    done.catch((err) => this.logger.error({ err, migrationId }, 'migration job failed'));
    const settled = done.finally(() => onProgress && this.migrationListeners.get(migrationId)?.delete(onProgress));
    // Most callers never wait for `done` (REST, a resumed job): its failure, logged above, must
    // not become an unhandled rejection, which ends the process.
    settled.catch(() => undefined);
    return { done: settled };
  }

  /**
   * Stop on the source, copy every volume into staging volumes on the target, then switch in one
   * transaction: storages point at the copies, the resource at its new destination. Until that
   * commit the resource is where it was and its source volumes are untouched; a failure leaves
   * exactly that and discards the copies.
   */
  private async runMigration(migrationId: number): Promise<void> {
    const m = await this.db.selectFrom('migrations_jobs').selectAll().where('id', '=', migrationId).executeTakeFirstOrThrow();
    if (m.status !== 'pending' && m.status !== 'copying') return;
    await this.db.updateTable('migrations_jobs').set({ status: 'copying', updated_at: nowIso() }).where('id', '=', m.id).execute();
    const controller = new AbortController();
    try {
      await this.runtime.stopResource(m.resource_id, controller.signal);
      const staged = await this.runtime.copyVolumes(m.id, {
        db: this.db,
        signal: controller.signal,
        progress: async (p) => {
          await this.db.updateTable('migrations_jobs').set({ progress: JSON.stringify(p), updated_at: nowIso() }).where('id', '=', m.id).execute();
          for (const l of this.migrationListeners.get(m.id) ?? []) l(p);
        },
      });
      await this.db.transaction().execute(async (trx) => {
        for (const [storageId, volume] of staged) {
          await trx.updateTable('storages').set({ engine_volume: volume, updated_at: nowIso() }).where('id', '=', storageId).execute();
        }
        await trx.updateTable('resources').set({ destination_id: m.to_destination_id, status: 'exited', updated_at: nowIso() }).where('id', '=', m.resource_id).execute();
        await trx.updateTable('migrations_jobs').set({ status: 'finished', finished_at: nowIso(), updated_at: nowIso() }).where('id', '=', m.id).execute();
      });
    } catch (err) {
      await this.failMigration(m.id, (err as Error).message);
      throw err;
    }
  }

  /**
   * A failed migration: recorded, its copies discarded, the resource left where it was in the
   * state it was in before (a running one is started again there, on its untouched volumes).
   */
  private async failMigration(migrationId: number, message: string): Promise<void> {
    this.logger.warn({ migrationId, err: message }, 'migration failed; the resource stays where it was');
    const m = await this.db.selectFrom('migrations_jobs').select(['resource_id', 'previous_status']).where('id', '=', migrationId).executeTakeFirstOrThrow();
    await this.runtime.discardStaging(migrationId).catch(() => undefined);
    let status = m.previous_status === 'running' ? 'running' : 'exited';
    if (status === 'running') {
      try {
        await this.runtime.startResource(m.resource_id);
      } catch (err) {
        this.logger.error({ err, migrationId }, 'could not start the resource again after a failed migration');
        status = 'exited';
      }
    }
    // "failed" is reported only once the rollback is done.
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('resources').set({ status, updated_at: nowIso() }).where('id', '=', m.resource_id).where('status', '=', 'migrating').execute();
      await trx.updateTable('migrations_jobs').set({ status: 'failed', error: message, finished_at: nowIso(), updated_at: nowIso() }).where('id', '=', migrationId).execute();
    });
  }

  /** Cancels a queued or running deployment; false when it already ended. */
  async cancel(deploymentId: number): Promise<boolean> {
    const r = await this.db
      .updateTable('deployments')
      .set({ status: 'cancelled', finished_at: nowIso(), updated_at: nowIso() })
      .where('id', '=', deploymentId)
      .where('status', 'in', ['queued', 'in_progress'])
      .executeTakeFirst();
    this.running.get(deploymentId)?.abort();
    return r.numUpdatedRows > 0n;
  }

  private async run(deploymentId: number): Promise<void> {
    const claimed = await this.db
      .updateTable('deployments')
      .set({ status: 'in_progress', started_at: nowIso(), updated_at: nowIso() })
      .where('id', '=', deploymentId)
      .where('status', '=', 'queued')
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n) return; // cancelled while it waited
    const controller = new AbortController();
    this.running.set(deploymentId, controller);
    const log = async (line: string) => {
      const row = await this.db.selectFrom('deployments').select('logs').where('id', '=', deploymentId).executeTakeFirstOrThrow();
      const logs = `${row.logs}${new Date().toISOString()} ${line}\n`.slice(-MAX_LOG_CHARS);
      await this.db.updateTable('deployments').set({ logs, updated_at: nowIso() }).where('id', '=', deploymentId).execute();
    };
    let status: 'finished' | 'failed';
    try {
      status = await this.runtime.runDeployment(deploymentId, { db: this.db, log, signal: controller.signal });
    } catch (err) {
      status = 'failed';
      await log(`failed: ${(err as Error).message}`).catch(() => undefined);
    } finally {
      this.running.delete(deploymentId);
    }
    await this.db
      .updateTable('deployments')
      .set({ status, finished_at: nowIso(), updated_at: nowIso() })
      .where('id', '=', deploymentId)
      .where('status', '=', 'in_progress')
      .execute();
  }
}
