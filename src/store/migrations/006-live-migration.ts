import type { Kysely } from 'kysely';

/** Live migration: how long the resource was down (stop on the source → records switched). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('migrations_jobs').addColumn('downtime_ms', 'integer').execute();
}
