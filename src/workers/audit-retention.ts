import type { Logger } from 'pino';
import { pruneAudit } from '../core/audit/query.js';
import type { Db } from '../store/db.js';
import { readAuditRetentionDays } from '../store/settings.js';
import type { Schedule } from './scheduler.js';

const DAY_MS = 86_400_000;

/**
 * Removes audit entries older than the instance's audit_retention_days: the only thing that
 * ever deletes from the log. Idempotent, so any instance may run it; each does so at most once
 * per `everyMs` (entries are kept for days, an hour's lag is nothing).
 */
export class AuditRetention implements Schedule {
  readonly scheduleName = 'audit retention';
  private lastRun = -Infinity;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly everyMs = 3_600_000,
  ) {}

  async tick(now: Date): Promise<void> {
    if (now.getTime() - this.lastRun < this.everyMs) return;
    this.lastRun = now.getTime();
    const days = await readAuditRetentionDays(this.db);
    const removed = await pruneAudit(this.db, new Date(now.getTime() - days * DAY_MS).toISOString());
    if (removed) this.logger.info({ removed, days }, 'audit: removed entries past retention');
  }
}
