import type { Kysely } from 'kysely';

/**
 * What the engine says about each resource, as berth last observed it (one row per resource,
 * written by the engine watcher of its server), a resource being deleted (its flags, while the
 * engine part is retried), and one watcher lease per server so instances share one observation.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, type] of [
    ['observed_status', 'text'],
    ['observed', 'text'],
    ['observed_at', 'text'],
    ['restart_count', 'integer'],
    ['last_exit_code', 'integer'],
    ['deleting', 'text'],
  ] as const) {
    await db.schema.alterTable('resources').addColumn(name, type).execute();
  }
  await db.schema
    .createTable('engine_watch_leases')
    .addColumn('server_id', 'integer', (c) => c.primaryKey().references('servers.id').onDelete('cascade'))
    .addColumn('lease_owner', 'text', (c) => c.notNull())
    .addColumn('lease_until', 'bigint', (c) => c.notNull())
    .execute();
}
