import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { Core } from './core/gate.js';
import type { Runtime } from './core/runtime.js';
import { JobRunner } from './workers/jobs.js';
import { JobQueues } from './limits/job-queues.js';
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

export interface Assembled {
  core: Core;
  jobs: JobRunner;
  limits: RateLimits;
  queues: JobQueues;
  /** Every schedule (backups, cleanups); started by `serve` and `berth mcp` alike. */
  scheduler: Scheduler;
  /** What changed, for the MCP door's subscriptions (in-process, PostgreSQL or Redis: change-feeds.ts). */
  changes: ChangeFeed;
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
    config.proxyImage,
  ),
): Assembled {
  const limits = RateLimits.create({ apiRateLimit: config.apiRateLimit, windowMs: config.rateWindowMs, redisUrl: config.redisUrl });
  const queues = new JobQueues({ concurrency: config.queueConcurrency, cap: config.queueCap, redisUrl: config.redisUrl });
  const jobs = new JobRunner(db, queues, runtime, logger, { holdPhase: config.testHoldMigrationPhase, leaseMs: config.jobLeaseMs, changes });
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
  return {
    core,
    jobs,
    limits,
    queues,
    scheduler,
    changes,
    async close() {
      await queues.close();
      await runtime.close();
      await limits.close();
      await changes.close();
    },
  };
}
