import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Scheduled volume backups (Coolify's storage backups): one schedule per persistent storage, its
 * settings as JSON, and its executions. A scheduled run is claimed by inserting its execution with
 * the time it was due (unique per schedule), so one berth instance runs it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('scheduled_volume_backups'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('storage_id', 'integer', (c) => c.notNull().unique().references('storages.id').onDelete('cascade'))
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await autoId(db.schema.createTable('scheduled_volume_backup_executions'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('backup_id', 'integer', (c) => c.notNull().references('scheduled_volume_backups.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('logs', 'text')
    .addColumn('size', 'bigint')
    .addColumn('filename', 'text')
    .addColumn('scheduled_for', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('volume_backup_run_once', ['backup_id', 'scheduled_for'])
    .execute();
}
