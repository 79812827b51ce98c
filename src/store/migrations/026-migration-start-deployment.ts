import type { Kysely } from 'kysely';

/**
 * start_on_destination queues a start deployment on the target (the per-server queue and its
 * cap apply, as for start_*): the migration keeps which one, so a caller can follow it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('migrations_jobs').addColumn('start_deployment_id', 'integer').execute();
}
