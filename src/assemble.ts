import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { Core } from './core/gate.js';
import type { Runtime } from './core/runtime.js';
import { JobRunner } from './workers/jobs.js';
import { RateLimits } from './limits/rate-limits.js';
import { LiveRuntime } from './engine/live-runtime.js';
import { TargetGuard } from './core/outbound-guard.js';
import type { Db } from './store/db.js';
// A core writes audit entries, which read the operation table (what a read hides): registered by loading it.
import './core/operations/index.js';
import { Scheduler } from './workers/scheduler.js';
import { VolumeBackupRunner } from './workers/volume-backup-runner.js';
import { DockerCleanupSchedule } from './workers/cleanup-schedule.js';
import { AuditRetention } from './workers/audit-retention.js';
import { OAuthClientSweep } from './workers/oauth-client-sweep.js';
import type { ChangeFeed } from './core/changes.js';
import { openChanges } from './core/change-feeds.js';
import { createMailer, type Mailer } from './mail/mailer.js';
import { ExpiryWarnings } from './workers/expiry-warnings.js';
import { Notifier } from './workers/notify/notifier.js';
import { createSenders } from './workers/notify/senders.js';
import { LogDrains } from './workers/log-drains.js';

export interface Assembled {
  core: Core;
  jobs: JobRunner;
  limits: RateLimits;
  /** Every schedule (backups, cleanups); started by `serve` and `berth mcp` alike. */
  scheduler: Scheduler;
  /** What changed, for the MCP door's subscriptions (in-process, PostgreSQL or Redis: change-feeds.ts). */
  changes: ChangeFeed;
  /** SMTP_URL's mailer (expiry warnings, the console's sign-in links); null without SMTP. */
  mailer: Mailer | null;
  /**
   * Starts the background work of an instance: job leases (renewal, the sweep that takes over a
   * dead instance's jobs, the queues' polling), the schedules, the engine watcher, notification
   * delivery and token-expiry warnings. One start for `serve` and `berth mcp` alike, so a job
   * started through either keeps its lease while the other shares the store.
   */
  start(): Promise<void>;
  /**
   * Stops it again (waiting jobs are handed back to the store for another instance). `finish`: a
   * process about to end (`berth approvals approve`) first waits for the jobs running in it.
   */
  stop(opts?: { finish?: boolean }): Promise<void>;
  close(): Promise<void>;
}

/** The core with its limits, queues, runtime, job runner and scheduler: the same for `serve` and `berth mcp`. */
export function assembleCore(
  db: Db,
  config: Config,
  logger: Logger,
  changes: ChangeFeed = openChanges(db, config, logger),
  runtime: Runtime = new LiveRuntime(
    db,
    logger,
    config.helperImage,
    config.migrationChecksums,
    { readyTimeoutMs: config.sshTimeoutMs, idleMs: config.sshIdleMs },
    new TargetGuard(config.outboundAllowedTargets),
    { leaseMs: config.watchLeaseMs, reconcileMs: config.watchReconcileMs, changes },
    config.buildpackImages,
    config.proxyImage,
  ),
): Assembled {
  const limits = RateLimits.create({ apiRateLimit: config.apiRateLimit, windowMs: config.rateWindowMs, redisUrl: config.redisUrl, redisTimeoutMs: config.redisTimeoutMs });
  const jobs = new JobRunner(db, { concurrency: config.queueConcurrency, cap: config.queueCap }, runtime, logger, { holdPhase: config.testHoldMigrationPhase, leaseMs: config.jobLeaseMs, changes });
  const core = new Core({ db, config, logger, limits, runtime, jobs, changes });
  // The one list of schedules: each claims its due runs once across instances (see Schedule).
  const scheduler = new Scheduler(
    [
      jobs.backups,
      jobs.tasks,
      new VolumeBackupRunner(db, runtime, logger),
      new DockerCleanupSchedule(db, runtime, logger),
      new AuditRetention(db, logger),
      new OAuthClientSweep(db, logger, config.oauthClientIdleDays),
    ],
    logger,
    config.scheduleTickMs,
  );
  const mailer = config.smtpUrl ? createMailer(config.smtpUrl, config.smtpFrom) : null;
  const outbound = new TargetGuard(config.outboundAllowedTargets);
  const expiry = new ExpiryWarnings(db, mailer, logger, config.expiryScanMs);
  const notifier = new Notifier(
    db,
    createSenders({ guard: outbound, mailer, telegramApiUrl: config.telegramApiUrl, pushoverApiUrl: config.pushoverApiUrl, timeoutMs: 10_000 }),
    logger,
    config.notifyScanMs,
  );
  // Each server's drain is shipped by the instance that watches its engine (the watch lease).
  const drains = new LogDrains(db, runtime, logger, { ...config.logDrains, guard: outbound, instanceId: jobs.instanceId, timeoutMs: 10_000 });
  let started = false;
  return {
    core,
    jobs,
    limits,
    scheduler,
    changes,
    mailer,
    async start() {
      started = true;
      await Promise.all([expiry.start(), notifier.start(), scheduler.start(), jobs.start()]);
      runtime.startWatching(jobs.instanceId);
      drains.start();
    },
    async stop(opts = {}) {
      if (!started) return;
      started = false;
      // Nothing new is claimed (schedules, notifications) while what runs here ends.
      await Promise.all([expiry.stop(), notifier.stop(), scheduler.stop(), drains.stop()]);
      if (opts.finish) await jobs.finish();
      await jobs.stop().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'could not hand back queued jobs'));
      await runtime.stopWatching().catch(() => undefined);
    },
    async close() {
      await runtime.close();
      await limits.close();
      await changes.close();
      mailer?.close();
    },
  };
}
