import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Docker cleanup per server, as Coolify's: its settings (JSON on the server, null for the
 * defaults) and its executions. A scheduled run carries the time it was due, unique per server,
 * so two berth instances never both run it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('docker_cleanup', 'text').execute();
  await autoId(db.schema.createTable('docker_cleanup_executions'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('cleanup_log', 'text')
    .addColumn('scheduled_for', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('docker_cleanup_executions_due', ['server_id', 'scheduled_for'])
    .execute();
}
