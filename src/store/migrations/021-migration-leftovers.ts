import type { Kysely } from 'kysely';

/**
 * What a switched migration still has to remove on its source server (the resource's stopped
 * containers there, and the source copies of volumes whose data moved), kept until removed so a
 * source that cannot be reached, or a berth that stops right after the switch, is retried; and
 * whether the caller asked to keep the source's volume copies.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('migrations_jobs').addColumn('leftovers', 'text').execute();
  await db.schema
    .alterTable('migrations_jobs')
    .addColumn('keep_source_volumes', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
