import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Scheduled database backups (Coolify's ScheduledDatabaseBackup) and their executions. Both go
 * with their database (ON DELETE CASCADE). An execution of a scheduled run carries the schedule
 * time it stands for; the unique (backup, scheduled_for) pair is how one berth instance, and only
 * one, claims a due run. On-demand runs have no schedule time (NULLs never collide).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('scheduled_database_backups'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
    .addColumn('description', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('save_s3', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('frequency', 'text', (c) => c.notNull())
    .addColumn('databases_to_backup', 'text')
    .addColumn('dump_all', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('database_backup_retention_amount_locally', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('database_backup_retention_days_locally', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('database_backup_retention_max_storage_locally', 'real', (c) => c.notNull().defaultTo(0))
    .addColumn('database_backup_retention_amount_s3', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('database_backup_retention_days_s3', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('database_backup_retention_max_storage_s3', 'real', (c) => c.notNull().defaultTo(0))
    .addColumn('timeout', 'integer', (c) => c.notNull().defaultTo(3600))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('scheduled_backups_resource').on('scheduled_database_backups').columns(['resource_id']).execute();

  await autoId(db.schema.createTable('scheduled_database_backup_executions'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('backup_id', 'integer', (c) => c.notNull().references('scheduled_database_backups.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('logs', 'text')
    .addColumn('size', 'bigint')
    .addColumn('filename', 'text')
    .addColumn('database_name', 'text')
    .addColumn('scheduled_for', 'text')
    .addColumn('local_storage_deleted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('finished_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('backup_run_once', ['backup_id', 'scheduled_for'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('scheduled_database_backup_executions').execute();
  await db.schema.dropTable('scheduled_database_backups').execute();
}
