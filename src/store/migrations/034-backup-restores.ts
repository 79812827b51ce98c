import type { Kysely } from 'kysely';

/**
 * A restore's state on the backup execution it loads (restore_status running, success or failed):
 * a restore runs past its call's answer (src/core/answer-bound.ts), so it is followed here, and an
 * instance that dies mid-restore leaves a row the backup runner's sweep fails, as it does backups.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  let t = db.schema.alterTable('scheduled_database_backup_executions');
  for (const c of ['restore_status', 'restore_message', 'restore_logs', 'restore_started_at', 'restore_finished_at']) {
    await t.addColumn(c, 'text').execute();
    t = db.schema.alterTable('scheduled_database_backup_executions');
  }
}
