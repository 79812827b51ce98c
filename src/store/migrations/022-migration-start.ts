import type { Kysely } from 'kysely';

/** A migration may start its resource on the target right after the switch (opt-in; 0 = the caller redeploys). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('migrations_jobs')
    .addColumn('start_on_destination', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
