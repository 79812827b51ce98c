import type { Logger } from 'pino';
import type { Schedule } from './scheduler.js';
import { cleanupSettingsOf } from '../core/model/cleanup.js';
import { lastDue } from '../core/frequency.js';
import { newUuid } from '../ids.js';
import type { Runtime } from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import { runCleanup } from './docker-cleanup-runner.js';

/**
 * Runs each managed server's Docker cleanup on its schedule. A due time is claimed by inserting
 * the execution with that time (unique per server), so with several berth instances one runs it;
 * a schedule missed while berth was down runs once, not once per missed slot. Cleanups that were
 * running when berth stopped are marked failed at the next start.
 */
export class DockerCleanupSchedule implements Schedule {
  readonly scheduleName = 'docker cleanups';

  constructor(
    private readonly db: Db,
    private readonly runtime: Runtime,
    private readonly logger: Logger,
  ) {}

  async recover(): Promise<void> {
    // An hour is far longer than a prune takes: such a row was cut off by a stop or a crash.
    const stale = new Date(Date.now() - 3_600_000).toISOString();
    await this.db
      .updateTable('docker_cleanup_executions')
      .set({ status: 'failed', message: 'berth stopped while this cleanup ran.', finished_at: nowIso(), updated_at: nowIso() })
      .where('status', '=', 'running')
      .where('created_at', '<', stale)
      .execute();
  }

  async tick(now = new Date()): Promise<void> {
    const servers = await this.db.selectFrom('servers').select(['id', 'docker_cleanup', 'validated_at', 'created_at']).where('is_usable', '=', 1).execute();
    for (const s of servers) {
      const settings = cleanupSettingsOf(s);
      const due = lastDue(settings.docker_cleanup_frequency, now);
      // Only slots after the engine became usable: validating a server does not run a past slot.
      if (!due || due.toISOString() <= (s.validated_at ?? s.created_at)) continue;
      const claimed = await this.db
        .insertInto('docker_cleanup_executions')
        .values({
          uuid: newUuid(),
          server_id: s.id,
          status: 'running',
          message: null,
          cleanup_log: null,
          scheduled_for: due.toISOString(),
          finished_at: null,
          created_at: nowIso(),
          updated_at: nowIso(),
        })
        .onConflict((oc) => oc.columns(['server_id', 'scheduled_for']).doNothing())
        .returning('id')
        .executeTakeFirst();
      if (claimed) await runCleanup({ db: this.db, runtime: this.runtime, logger: this.logger }, claimed.id, { volumes: settings.delete_unused_volumes, networks: settings.delete_unused_networks });
    }
  }
}
