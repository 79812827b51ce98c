import { randomUUID } from 'node:crypto';
import { BerthError } from '../errors.js';
import { sql, type RawBuilder, type SqlBool, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import { notify } from './notify/notifier.js';
import type { MigrationProgress, Runtime } from '../core/runtime.js';
import { ServerQueues } from './server-queues.js';
import { queueCopies } from './destination-copies.js';
import { nowIso, type Db } from '../store/db.js';
import type { Database } from '../store/schema.js';
import { newUuid } from '../ids.js';
import { BackupRunner } from './database-backup-runner.js';
import { TaskRunner } from './scheduled-tasks.js';
import { NOT_OBSERVED } from '../core/observed-status.js';
import { finishDeletion, retryDeletions } from './deletions.js';
import { sourceLeftovers } from '../core/migration-leftovers.js';
import { removeLeftovers, retryLeftovers } from './leftovers.js';
import { OutageLog } from '../logging/outage.js';
import type { RemoveOptions } from '../core/runtime.js';
import type { DeploymentRequest, Jobs } from '../core/jobs.js';
import { VolumeBackupRunner } from './volume-backup-runner.js';
import { runCleanup } from './docker-cleanup-runner.js';
import { ChangeThrottle, NO_CHANGES, type ChangePublisher } from '../core/changes.js';

/** The reason a migration's copy is aborted when someone cancels it. */
class MigrationCancelled extends Error {
  override name = 'MigrationCancelled';
  constructor() {
    super('cancelled');
  }
}

/** A migration whose lease another instance took over (this one was cut off from the store too long). */
class LeaseLost extends Error {
  override name = 'LeaseLost';
  constructor() {
    super('another berth instance took this migration over');
  }
}

/**
 * The pause's parts in ms (bench/migrate prints them): stopping the source, sending the last
 * pass, applying and verifying it on the target, and the switch (its state save and transaction
 * up to this point).
 */
function pauseParts(stoppedAt: number | undefined, m: { stopped?: number; uploaded?: number; moved?: number; switching?: number }): { pause_ms?: Record<string, number> } {
  if (stoppedAt === undefined || m.stopped === undefined || m.moved === undefined) return {};
  const uploaded = m.uploaded ?? m.moved;
  return { pause_ms: { stop: m.stopped - stoppedAt, send: uploaded - m.stopped, verify: m.moved - uploaded, switch: Date.now() - m.moved } };
}

/** A row with no lease this long after its last change was inserted by an instance that died before queueing it. */
const UNLEASED_GRACE_MS = 60_000;

/** The largest deployment log kept; older lines are dropped first. */
const MAX_LOG_CHARS = 1_000_000;

/**
 * Runs deployments (deploy, start, stop, restart) and migrations through the per-server queues.
 * A job is a row first, claimed by the instance that queues or runs it with a lease it renews
 * while it lives (several instances may share one store). A job whose lease ran out belongs to an
 * instance that died: another (or the same one, restarted) takes it over by the restart rules: a
 * queued one is queued again, one cut off while running fails (a deployment) or is rolled back (a
 * migration), never reported as done.
 */
export class JobRunner implements Jobs {
  /** This process's name on the leases it holds. */
  readonly instanceId = randomUUID();
  private readonly leaseMs: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private readonly running = new Map<number, AbortController>();
  private readonly runningMigrations = new Map<number, AbortController>();
  private readonly migrationListeners = new Map<number, Set<(p: MigrationProgress) => void>>();
  /** Deployments queued by this process until they end, for callers that wait for one. */
  private readonly queuedHere = new Map<number, Promise<void>>();
  /** Database backups: on-demand runs, scheduled runs claimed once across instances, retention. */
  readonly backups: BackupRunner;
  /** Scheduled tasks of applications and services: on demand, and their firings claimed once across instances. */
  readonly tasks: TaskRunner;
  private readonly outage: OutageLog;
  /** Deployment logs and migration progress: a few changes a second at most (the last one always said). */
  private readonly throttle: ChangeThrottle;
  private readonly changes: ChangePublisher;
  /** The per-server queues, counted in the store (server-queues.ts). */
  private readonly queues: ServerQueues;

  constructor(
    private readonly db: Db,
    queue: { concurrency: number; cap: number },
    private readonly runtime: Runtime,
    private readonly logger: Logger,
    /** Tests only (BERTH_TEST_HOLD_MIGRATION_PHASE): hold a migration when it enters this phase. */
    private readonly opts: { holdPhase?: { phase: string; ms: number } | null; leaseMs?: number; changes?: ChangePublisher } = {},
  ) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.changes = opts.changes ?? NO_CHANGES;
    this.throttle = new ChangeThrottle(this.changes);
    this.backups = new BackupRunner(db, runtime, logger);
    this.tasks = new TaskRunner(db, runtime, logger);
    this.outage = new OutageLog(logger, 'job leases', 'warn');
    // A slot freed on another instance is seen within a second (sooner with a short lease).
    this.queues = new ServerQueues(db, { ...queue, pollMs: Math.max(100, Math.min(1_000, Math.floor(this.leaseMs / 4))) }, this.instanceId, this.leaseEnd, logger);
  }

  private leaseEnd = () => Date.now() + this.leaseMs;

  /**
   * Says on the change feed that a deployment or migration (and so its resource, whose last
   * deployment or place it is) changed. `how`: at once, throttled (progress, log lines), or at
   * once and the throttle's key forgotten (it ended). Never fails the job.
   */
  private said(table: 'deployments' | 'migrations_jobs', id: number, how: 'now' | 'throttled' | 'ended' = 'now'): void {
    if (this.changes === NO_CHANGES) return;
    const key = `${table}:${id}`;
    // Both tables have the columns read here; typed as one of them so the builder is one type.
    const q = this.db
      .selectFrom(table === 'deployments' ? 'deployments as j' : ('migrations_jobs as j' as 'deployments as j'))
      .innerJoin('resources as r', 'r.id', 'j.resource_id')
      .select(['j.uuid', 'j.team_id', 'r.uuid as resource_uuid'])
      .where('j.id', '=', id);
    void q
      .executeTakeFirst()
      .then((row) => {
        if (!row) return;
        const change = { teamId: row.team_id, uuids: [row.uuid, row.resource_uuid] };
        if (how === 'throttled') this.throttle.publish(key, change);
        else if (how === 'ended') this.throttle.done(key, change);
        else this.changes.publish(change);
      })
      .catch(() => undefined);
  }

  /** Rows whose lease has run out (or that were never leased, long ago): their instance is gone. */
  private stale(alias?: string): RawBuilder<SqlBool> {
    const col = (c: string) => sql.ref(alias ? `${alias}.${c}` : c);
    const now = Date.now();
    const old = new Date(now - UNLEASED_GRACE_MS).toISOString();
    return sql<SqlBool>`(${col('lease_until')} < ${now} or (${col('lease_until')} is null and ${col('updated_at')} < ${old}))`;
  }

  /**
   * Takes over what instances that are gone left (at once, then every third of a lease), and
   * renews the leases of what this one holds.
   */
  async start(): Promise<void> {
    this.queues.start();
    await this.sweep();
    this.timer = setInterval(
      () => {
        this.ticking ??= this.renew()
          .then(() => this.sweep())
          .then(() => retryDeletions(this.db, this.runtime, this.logger))
          .then(() => retryLeftovers(this.db, this.runtime, this.logger))
          .then(
            () => this.outage.ok(),
            (err) => this.outage.failed(err),
          )
          .finally(() => (this.ticking = undefined));
      },
      Math.max(250, Math.floor(this.leaseMs / 3)),
    );
    this.timer.unref();
  }

  /**
   * For a process about to end (the CLI): starts nothing more, and waits for the jobs running here
   * to end (their leases still renewed), since a running job cannot be handed to another instance.
   * stop() then hands back what waits.
   */
  async finish(): Promise<void> {
    this.queues.stop();
    await this.queues.idle();
  }

  /**
   * Stops renewing and hands back what has not started (another instance queues it at once);
   * a job running now keeps its lease until it ends or the lease runs out.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.queues.stop();
    await this.ticking;
    await this.db.updateTable('deployments').set({ lease_until: 0 }).where('lease_owner', '=', this.instanceId).where('status', '=', 'queued').execute();
    await this.db.updateTable('migrations_jobs').set({ lease_until: 0 }).where('lease_owner', '=', this.instanceId).where('status', '=', 'pending').execute();
  }

  /**
   * Renews the leases of the jobs this process holds (waiting here or running), by id: a row whose
   * job ended here but whose last write failed (the store away) is not kept alive for ever; its
   * lease runs out and the sweep ends it.
   */
  private async renew(): Promise<void> {
    const until = this.leaseEnd();
    const deployments = [...this.queues.waitingIds('deployment'), ...this.running.keys()];
    const migrations = [...this.queues.waitingIds('migration'), ...this.runningMigrations.keys()];
    if (deployments.length > 0) {
      await this.db
        .updateTable('deployments')
        .set({ lease_until: until })
        .where('lease_owner', '=', this.instanceId)
        .where('id', 'in', deployments)
        .where('status', 'in', ['queued', 'in_progress'])
        .execute();
    }
    if (migrations.length > 0) {
      await this.db
        .updateTable('migrations_jobs')
        .set({ lease_until: until })
        .where('lease_owner', '=', this.instanceId)
        .where('id', 'in', migrations)
        .where('status', 'in', ['pending', 'copying'])
        .execute();
    }
  }

  /** Claims a stale row for this instance; only one instance's claim of a row succeeds. */
  private async claim(table: 'deployments' | 'migrations_jobs', id: number, status: string): Promise<boolean> {
    const r = await this.db
      .updateTable(table)
      .set({ lease_owner: this.instanceId, lease_until: this.leaseEnd() })
      .where('id', '=', id)
      .where('status', '=', status as never)
      .where(this.stale())
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  /** Takes over the jobs of instances that are gone, by the restart rules. */
  async sweep(): Promise<void> {
    const cutOff = await this.db.selectFrom('migrations_jobs').select(['id', 'progress']).where('status', '=', 'copying').where(this.stale()).orderBy('id').execute();
    for (const m of cutOff) {
      if (!(await this.claim('migrations_jobs', m.id, 'copying'))) continue;
      const phase = (JSON.parse(m.progress) as Partial<MigrationProgress>).phase ?? 'pre-copy';
      await this.failMigration(m.id, `berth stopped during the migration (${phase}); it was rolled back: the resource stays where it was. Migrate again.`);
    }
    const migrations = await this.db
      .selectFrom('migrations_jobs as m')
      .innerJoin('destinations as d', 'd.id', 'm.to_destination_id')
      .select(['m.id', 'd.server_id'])
      .where('m.status', '=', 'pending')
      .where(this.stale('m'))
      .orderBy('m.id')
      .execute();
    for (const m of migrations) {
      if (!(await this.claim('migrations_jobs', m.id, 'pending'))) continue;
      await this.queueMigration(m.id, m.server_id, undefined, false).catch(async (err: Error) => {
        // Not resumable now (e.g. the target's queue is full): roll back rather than leave the
        // resource blocked as migrating. Its source volumes were never touched; a re-run is safe.
        this.logger.error({ err, migrationId: m.id }, 'could not resume a migration; rolling it back');
        await this.failMigration(m.id, `Could not be resumed after a restart: ${err.message}`);
      });
    }
    const running = await this.db.selectFrom('deployments').select('id').where('status', '=', 'in_progress').where(this.stale()).orderBy('id').execute();
    for (const d of running) {
      if (!(await this.claim('deployments', d.id, 'in_progress'))) continue;
      await this.db.updateTable('deployments').set({ status: 'failed', finished_at: nowIso(), updated_at: nowIso() }).where('id', '=', d.id).where('status', '=', 'in_progress').execute();
      this.said('deployments', d.id, 'ended');
      this.logger.warn({ deploymentId: d.id }, 'a deployment cut off by a stopped berth marked failed');
    }
    const queued = await this.db.selectFrom('deployments').select(['id', 'server_id']).where('status', '=', 'queued').where(this.stale()).orderBy('id').execute();
    for (const d of queued) {
      if (!(await this.claim('deployments', d.id, 'queued'))) continue;
      await this.enqueue(d.id, d.server_id, false).catch(async (err) => {
        this.logger.error({ err, deploymentId: d.id }, 'could not requeue');
        // Handed back: another instance (or a later sweep) tries again.
        await this.db.updateTable('deployments').set({ lease_until: 0 }).where('id', '=', d.id).execute();
      });
    }
  }

  /**
   * Puts a deployment on its server's queue; 429 "Deployment queue is full." when it is (a row
   * taken over from an instance that is gone was counted already: `checkRoom` false).
   */
  async enqueue(deploymentId: number, serverId: number, checkRoom = true): Promise<{ done: Promise<void> }> {
    if (checkRoom) await this.queues.checkRoom('deployment', deploymentId, serverId);
    await this.db.updateTable('deployments').set({ lease_owner: this.instanceId, lease_until: this.leaseEnd() }).where('id', '=', deploymentId).execute();
    const done = this.queues.submit('deployment', deploymentId, serverId, () => this.run(deploymentId));
    // Settles when the deployment has ended, however; never rejects (failures are logged here).
    const ended = done.catch((err) => this.logger.error({ err, deploymentId }, 'deployment job failed'));
    if (!this.queuedHere.has(deploymentId)) {
      this.queuedHere.set(deploymentId, ended);
      void ended.finally(() => this.queuedHere.get(deploymentId) === ended && this.queuedHere.delete(deploymentId));
    }
    return { done: ended };
  }

  /**
   * Queues a migration's volume transfer on the target server's queue. `done` settles when the
   * migration has finished or failed; `onProgress` hears every progress update.
   */
  enqueueMigration(migrationId: number, serverId: number, onProgress?: (p: MigrationProgress) => void): Promise<{ done: Promise<void> }> {
    return this.queueMigration(migrationId, serverId, onProgress, true);
  }

  private async queueMigration(migrationId: number, serverId: number, onProgress: ((p: MigrationProgress) => void) | undefined, checkRoom: boolean): Promise<{ done: Promise<void> }> {
    if (checkRoom) await this.queues.checkRoom('migration', migrationId, serverId);
    if (onProgress) {
      let set = this.migrationListeners.get(migrationId);
      if (!set) this.migrationListeners.set(migrationId, (set = new Set()));
      set.add(onProgress);
    }
    await this.db.updateTable('migrations_jobs').set({ lease_owner: this.instanceId, lease_until: this.leaseEnd() }).where('id', '=', migrationId).execute();
    const done = this.queues.submit('migration', migrationId, serverId, () => this.runMigration(migrationId));
    done.catch((err) => this.logger.error({ err, migrationId }, 'migration job failed'));
    const settled = done.finally(() => onProgress && this.migrationListeners.get(migrationId)?.delete(onProgress));
    // Most callers never wait for `done` (REST, a resumed job): its failure, logged above, must
    // not become an unhandled rejection, which ends the process.
    settled.catch(() => undefined);
    return { done: settled };
  }

  /**
   * Live migration: the runtime copies every volume into staging volumes on the target while the
   * resource runs, stops it (stopSource, where the pause starts), sends the last difference and
   * verifies; then one transaction switches: storages point at the copies, the resource at its new
   * destination, the migration records how long the resource was down. Until that commit the
   * resource and its data are where they were; a failure or a cancel rolls back to exactly that.
   */
  private async runMigration(migrationId: number): Promise<void> {
    // Marked copying, leased by this instance, by the queue that started it.
    const m = await this.db.selectFrom('migrations_jobs').selectAll().where('id', '=', migrationId).executeTakeFirstOrThrow();
    this.said('migrations_jobs', m.id);
    const controller = new AbortController();
    this.runningMigrations.set(m.id, controller);
    let progress: MigrationProgress = { ...(JSON.parse(m.progress) as MigrationProgress) };
    const hold = this.opts.holdPhase;
    const save = async (p: MigrationProgress) => {
      const entering = p.phase !== progress.phase;
      progress = p;
      // Every save renews the lease, and finds out whether another instance took the job over
      // (this one could not reach the store for a whole lease): then it stops at once.
      const saved = await this.db
        .updateTable('migrations_jobs')
        .set({ progress: JSON.stringify(p), lease_until: this.leaseEnd(), updated_at: nowIso() })
        .where('id', '=', m.id)
        .where('lease_owner', '=', this.instanceId)
        .executeTakeFirst();
      if (saved.numUpdatedRows === 0n) controller.abort(new LeaseLost());
      else this.said('migrations_jobs', m.id, entering ? 'now' : 'throttled');
      for (const l of this.migrationListeners.get(m.id) ?? []) l(p);
      if (entering && hold?.phase === p.phase) await new Promise((r) => setTimeout(r, hold.ms));
    };
    let stoppedAt: number | undefined;
    // Where the pause goes (kept in the record's progress, not shown): stop, last pass sent, verified, switched.
    const marks: { stopped?: number; uploaded?: number; moved?: number; switching?: number } = {};
    let release: (() => Promise<void>) | undefined;
    try {
      const { staged, release: releaseCopy } = await this.runtime.moveVolumes(m.id, {
        db: this.db,
        signal: controller.signal,
        progress: (p) => {
          if (p.phase === 'verify') marks.uploaded ??= Date.now();
          return save(p);
        },
        stopSource: async () => {
          stoppedAt = Date.now();
          await this.runtime.stopResource(m.resource_id, controller.signal);
          marks.stopped = Date.now();
        },
      });
      release = releaseCopy;
      marks.moved = Date.now();
      controller.signal.throwIfAborted();
      await save({ ...progress, phase: 'switch' });
      marks.switching = Date.now();
      await this.db.transaction().execute(async (trx) => {
        const leftovers = await sourceLeftovers(trx, m, m.keep_source_volumes ? [] : [...staged.keys()], true);
        for (const [storageId, volume] of staged) {
          await trx.updateTable('storages').set({ engine_volume: volume, updated_at: nowIso() }).where('id', '=', storageId).execute();
        }
        await trx
          .updateTable('resources')
          .set({ destination_id: m.to_destination_id, status: 'exited', ...NOT_OBSERVED, updated_at: nowIso() })
          .where('id', '=', m.resource_id)
          .execute();
        const done = await trx
          .updateTable('migrations_jobs')
          .set({
            status: 'finished',
            progress: JSON.stringify({ ...progress, phase: 'done', ...pauseParts(stoppedAt, marks) }),
            downtime_ms: stoppedAt === undefined ? null : Date.now() - stoppedAt,
            leftovers,
            finished_at: nowIso(),
            updated_at: nowIso(),
          })
          .where('id', '=', m.id)
          .where('lease_owner', '=', this.instanceId)
          .executeTakeFirst();
        // Taken over meanwhile: the other instance rolls it back; nothing of this switch commits.
        if (done.numUpdatedRows === 0n) throw new LeaseLost();
        if (m.start_on_destination === 1) await this.recordMovedStart(trx, m);
      });
      this.said('migrations_jobs', m.id, 'ended');
      if (hold?.phase === 'done') await new Promise((r) => setTimeout(r, hold.ms));
      // Opt-in: a start queued on the target at once, so the pause a user sees is this one (and
      // the target's queue). The move stands whatever the start does; a failure is recorded.
      if (m.start_on_destination === 1) await this.startMoved(m.id);
      // The copy's helpers go now, after the switch (removing two containers took ~0.3 s of the
      // pause), and before the source volumes they mount can be removed.
      await release();
      await removeLeftovers(this.db, this.runtime, this.logger, m.id);
    } catch (err) {
      if (err instanceof LeaseLost || controller.signal.reason instanceof LeaseLost) {
        this.logger.warn({ migrationId: m.id }, 'migration taken over by another berth instance; stopping here');
        await this.runtime.discardStaging(m.id).catch(() => undefined);
        return;
      }
      const cancelled = controller.signal.aborted && controller.signal.reason instanceof MigrationCancelled;
      await this.failMigration(m.id, cancelled ? 'Cancelled; the resource stays where it was.' : (err as Error).message, cancelled ? 'cancelled' : 'failed');
      if (!cancelled) throw err;
    } finally {
      // A switch that failed or was taken over: the helpers go too (discardStaging removes any a
      // crashed attempt left, by label).
      await release?.().catch((err) => this.logger.warn({ err, migrationId: m.id }, 'could not remove the volume-copy helpers'));
      this.runningMigrations.delete(m.id);
    }
  }

  /**
   * In the switch's transaction: the start deployment of a resource moved with
   * start_on_destination, on the target server (queued by `startMoved` once committed; one
   * left by a berth that stopped in between is queued by the sweep like any other).
   */
  async recordMovedStart(trx: Db | Transaction<Database>, m: { id: number; team_id: number; resource_id: number; to_destination_id: number }): Promise<void> {
    const target = await trx.selectFrom('destinations').select('server_id').where('id', '=', m.to_destination_id).executeTakeFirstOrThrow();
    const d = await this.recordDeployment(trx, { teamId: m.team_id, resourceId: m.resource_id, serverId: target.server_id, kind: 'start', force: false });
    await trx.updateTable('migrations_jobs').set({ start_deployment_id: d.id }).where('id', '=', m.id).execute();
  }

  /** Removes what a switched migration left on its source (retried by the sweep when that fails). */
  async removeLeftovers(migrationId: number): Promise<void> {
    await removeLeftovers(this.db, this.runtime, this.logger, migrationId);
  }

  /**
   * Records a deployment (queued, leased by this instance) in `db`, which may be a transaction:
   * queue it with `enqueue` once that has committed.
   */
  async recordDeployment(db: Db | Transaction<Database>, d: DeploymentRequest): Promise<{ id: number; uuid: string }> {
    return db
      .insertInto('deployments')
      .values({
        uuid: newUuid(),
        team_id: d.teamId,
        resource_id: d.resourceId,
        server_id: d.serverId,
        kind: d.kind,
        status: 'queued',
        force: d.force ? 1 : 0,
        logs: '',
        started_at: null,
        finished_at: null,
        rollback_tag: d.rollbackTag ?? null,
        pull_request_id: d.pullRequestId ?? 0,
        lease_owner: this.instanceId,
        lease_until: this.leaseEnd(),
        created_at: nowIso(),
        updated_at: nowIso(),
      })
      .returning(['id', 'uuid'])
      .executeTakeFirstOrThrow();
  }

  /**
   * Records a deployment and puts it on its server's queue. When the queue is full the record is
   * removed again and 429 "Deployment queue is full." is thrown: nothing half-queued stays.
   */
  async queueDeployment(d: DeploymentRequest): Promise<{ id: number; uuid: string; done: Promise<void> }> {
    const row = await this.recordDeployment(this.db, d);
    try {
      const { done } = await this.enqueue(row.id, d.serverId);
      return { ...row, done };
    } catch (err) {
      await this.db.deleteFrom('deployments').where('id', '=', row.id).execute();
      throw err;
    }
  }

  /** Settles when a deployment queued by this process has ended (at once when it is not one of them). */
  runScheduledTask(taskId: number): Promise<string> {
    return this.tasks.runNow(taskId);
  }

  deploymentEnded(deploymentId: number): Promise<void> {
    return this.queuedHere.get(deploymentId) ?? Promise.resolve();
  }

  /**
   * Queues the start deployment a switched migration recorded (start_on_destination) on the
   * target's queue, like start_* (never waited for here: a job waiting for another on the same
   * queue could wait for ever). The move stands whatever the start does; a full queue or a
   * failed start is recorded in the migration's error, and the caller starts it then.
   */
  async startMoved(migrationId: number): Promise<{ uuid: string; done: Promise<void> } | { error: string }> {
    const m = await this.db
      .selectFrom('migrations_jobs as m')
      .innerJoin('deployments as d', 'd.id', 'm.start_deployment_id')
      .select(['m.uuid', 'd.id as deployment_id', 'd.uuid as deployment_uuid', 'd.server_id'])
      .where('m.id', '=', migrationId)
      .executeTakeFirst();
    if (!m) return { error: 'Moved, but no start was recorded for it; start it.' };
    const failed = async (error: string) => {
      this.logger.warn({ migration: m.uuid, deployment: m.deployment_uuid, err: error }, 'a migrated resource was not started on its destination');
      await this.db.updateTable('migrations_jobs').set({ error, updated_at: nowIso() }).where('id', '=', migrationId).execute();
      this.said('migrations_jobs', migrationId);
      return { error };
    };
    let done: Promise<void>;
    try {
      ({ done } = await this.enqueue(m.deployment_id, m.server_id));
    } catch (err) {
      await this.db.transaction().execute(async (trx) => {
        await trx.updateTable('migrations_jobs').set({ start_deployment_id: null }).where('id', '=', migrationId).execute();
        await trx.deleteFrom('deployments').where('id', '=', m.deployment_id).execute();
      });
      return failed(`Moved, but its start could not be queued on the destination (${(err as Error).message}); start it.`);
    }
    const recorded = done.then(async () => {
      const d = await this.db.selectFrom('deployments').select('status').where('id', '=', m.deployment_id).executeTakeFirst();
      if (d?.status !== 'finished') await failed(`Moved, but starting it on the destination ${d?.status ?? 'was cancelled'} (deployment ${m.deployment_uuid}; get_deployment has its logs); start it.`);
    });
    // The outcome is in the migration record before anyone waiting hears the deployment ended.
    const ended = recorded.catch((err) => this.logger.error({ err, migration: m.uuid }, 'could not record how a migrated resource started'));
    this.queuedHere.set(m.deployment_id, ended);
    void ended.finally(() => this.queuedHere.get(m.deployment_id) === ended && this.queuedHere.delete(m.deployment_id));
    return { uuid: m.deployment_uuid, done: ended };
  }

  /**
   * Cancels a migration before its switch: a waiting one ends at once, a running one stops its
   * copy and rolls back. False when it has already ended (or is switching: too late to cancel).
   */
  async cancelMigration(migrationId: number): Promise<boolean> {
    const waiting = await this.db.updateTable('migrations_jobs').set({ status: 'cancelling', updated_at: nowIso() }).where('id', '=', migrationId).where('status', '=', 'pending').executeTakeFirst();
    if (waiting.numUpdatedRows > 0n) {
      await this.failMigration(migrationId, 'Cancelled before it started; the resource stays where it was.', 'cancelled');
      return true;
    }
    const running = this.runningMigrations.get(migrationId);
    const m = await this.db.selectFrom('migrations_jobs').select(['status', 'progress']).where('id', '=', migrationId).executeTakeFirst();
    if (!running || m?.status !== 'copying' || (JSON.parse(m.progress) as Partial<MigrationProgress>).phase === 'switch') return false;
    running.abort(new MigrationCancelled());
    return true;
  }

  /**
   * A failed migration: recorded, its copies discarded, the resource left where it was in the
   * state it was in before (a running one is started again there, on its untouched volumes).
   */
  private async failMigration(migrationId: number, message: string, status: 'failed' | 'cancelled' = 'failed'): Promise<void> {
    this.logger.warn({ migrationId, err: message }, 'migration failed; the resource stays where it was');
    const m = await this.db.selectFrom('migrations_jobs').select(['resource_id', 'previous_status']).where('id', '=', migrationId).executeTakeFirstOrThrow();
    await this.runtime.discardStaging(migrationId).catch(() => undefined);
    let resourceStatus = m.previous_status === 'running' ? 'running' : 'exited';
    if (resourceStatus === 'running') {
      try {
        // Stopped for the last pass, or still running: either way running on the source again.
        await this.runtime.startResource(m.resource_id);
      } catch (err) {
        this.logger.error({ err, migrationId }, 'could not start the resource again after a failed migration');
        resourceStatus = 'exited';
      }
    }
    // "failed" is reported only once the rollback is done.
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('resources').set({ status: resourceStatus, updated_at: nowIso() }).where('id', '=', m.resource_id).where('status', '=', 'migrating').execute();
      await trx.updateTable('migrations_jobs').set({ status, error: message, finished_at: nowIso(), updated_at: nowIso() }).where('id', '=', migrationId).execute();
    });
    this.said('migrations_jobs', migrationId, 'ended');
  }

  /**
   * Deletes a resource: marks it (with its flags), cancels its deployments, removes what it has
   * on its engine, then its records. When the engine part fails the resource stays, marked as
   * being deleted, and the tick tries again.
   */
  async deleteResource(resourceId: number, flags: RemoveOptions): Promise<{ done: boolean; error?: string; log: string[] }> {
    // The mark is the claim: one statement, so of deletes racing (or one after a delete whose
    // engine could not be reached) exactly one goes on; the others answer 404 like a delete of
    // a resource that is gone, whatever the engine's state.
    const claimed = await this.db
      .updateTable('resources')
      .set({ deleting: JSON.stringify(flags), updated_at: nowIso() })
      .where('id', '=', resourceId)
      .where('deleting', 'is', null)
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n) throw new BerthError('not_found');
    const active = await this.db.selectFrom('deployments').select('id').where('resource_id', '=', resourceId).where('status', 'in', ['queued', 'in_progress']).execute();
    for (const d of active) await this.cancel(d.id);
    return finishDeletion(this.db, this.runtime, this.logger, resourceId);
  }

  async runDatabaseBackup(backupId: number): Promise<number> {
    const id = (await this.backups.claim(backupId, null))!;
    this.backups.start(id);
    return id;
  }

  async restoreDatabaseBackup(executionId: number, o: { timeoutS: number; okMessage: string }) {
    return (await this.backups.claimRestore(executionId)) ? this.backups.startRestore(executionId, o) : null;
  }

  async runVolumeBackup(backupId: number): Promise<string> {
    const runner = new VolumeBackupRunner(this.db, this.runtime, this.logger);
    const claimed = (await runner.claim(backupId, null))!;
    void runner.run(claimed.id);
    return claimed.uuid;
  }

  runDockerCleanup(executionId: number, opts: { volumes: boolean; networks: boolean }): void {
    void runCleanup({ db: this.db, runtime: this.runtime, logger: this.logger }, executionId, opts);
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
    if (r.numUpdatedRows > 0n) this.said('deployments', deploymentId, 'ended');
    return r.numUpdatedRows > 0n;
  }

  /** Runs a deployment the queue has marked in_progress (leased by this instance). */
  private async run(deploymentId: number): Promise<void> {
    this.said('deployments', deploymentId);
    const controller = new AbortController();
    this.running.set(deploymentId, controller);
    const log = async (line: string) => {
      const row = await this.db.selectFrom('deployments').select('logs').where('id', '=', deploymentId).executeTakeFirstOrThrow();
      const logs = `${row.logs}${new Date().toISOString()} ${line}\n`.slice(-MAX_LOG_CHARS);
      await this.db.updateTable('deployments').set({ logs, updated_at: nowIso() }).where('id', '=', deploymentId).execute();
      this.said('deployments', deploymentId, 'throttled');
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
    const ended = await this.db
      .updateTable('deployments')
      .set({ status, finished_at: nowIso(), updated_at: nowIso() })
      .where('id', '=', deploymentId)
      .where('status', '=', 'in_progress')
      .executeTakeFirst();
    if (ended.numUpdatedRows > 0n) {
      this.said('deployments', deploymentId, 'ended');
      await this.notifyDeployment(deploymentId, status);
      // additional destinations: the primary's finished work goes on to each other server's copy
      if (status === 'finished') await queueCopies(this.db, this, this.logger, deploymentId, log).catch((err) => this.logger.warn({ err, deploymentId }, 'could not queue the copies'));
    }
  }

  /** Tells the team's notification channels how a deployment ended (cancelled ones are not news). */
  private async notifyDeployment(deploymentId: number, status: 'finished' | 'failed'): Promise<void> {
    const d = await this.db
      .selectFrom('deployments as d')
      .innerJoin('resources as r', 'r.id', 'd.resource_id')
      .innerJoin('servers as s', 's.id', 'd.server_id')
      .select(['d.uuid', 'd.kind', 'd.team_id', 'r.uuid as resource_uuid', 'r.name', 'r.kind as resource_kind', 's.name as server'])
      .where('d.id', '=', deploymentId)
      .executeTakeFirst();
    if (!d) return;
    const ok = status === 'finished';
    const what = d.kind === 'deploy' ? 'Deployment' : `${d.kind[0]!.toUpperCase()}${d.kind.slice(1)}`;
    await notify(this.db, this.logger, d.team_id, `deployment:${d.uuid}`, {
      event: ok ? 'deployment_success' : 'deployment_failure',
      title: `${what} of ${d.name} ${ok ? 'finished' : 'failed'}`,
      text: `${what} ${d.uuid} of ${d.resource_kind} ${d.name} (${d.resource_uuid}) on server ${d.server} ${ok ? 'finished' : 'failed'}.${ok ? '' : ' Its logs say why (get_deployment).'}`,
      data: { deployment_uuid: d.uuid, resource_uuid: d.resource_uuid, resource_type: d.resource_kind, kind: d.kind, status },
    });
  }
}
