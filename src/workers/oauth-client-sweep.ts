import type { Logger } from 'pino';
import { sweepOAuthClients } from '../auth/oauth/client-sweep.js';
import type { Db } from '../store/db.js';
import type { Schedule } from './scheduler.js';

/**
 * Removes OAuth registrations that never completed an authorization within 24 h or went unused
 * for `idleDays`, with their approvals, and every other expired OAuth record (client-sweep.ts).
 * Idempotent, so any instance may run it; each does so at most once per `everyMs`.
 */
export class OAuthClientSweep implements Schedule {
  readonly scheduleName = 'oauth client sweep';
  private lastRun = -Infinity;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly idleDays: number,
    private readonly everyMs = 600_000,
  ) {}

  async tick(now: Date): Promise<void> {
    if (now.getTime() - this.lastRun < this.everyMs) return;
    this.lastRun = now.getTime();
    const swept = await sweepOAuthClients(this.db, this.idleDays, now.getTime());
    if (swept.approvals) this.logger.info(swept, 'oauth: removed unused clients and their approvals');
  }
}
