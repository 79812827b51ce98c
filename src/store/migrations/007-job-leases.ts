import { sql, type Kysely } from 'kysely';

/**
 * Jobs are claimed with a lease: the instance that runs or queues a deployment or a migration
 * owns it until lease_until (ms since the epoch) and renews that while it works; an instance that
 * dies stops renewing, and another takes the job over by the restart rules. Jobs active before
 * this migration get an expired lease, so the first instance to start recovers them at once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['deployments', 'migrations_jobs']) {
    await db.schema.alterTable(table).addColumn('lease_owner', 'text').execute();
    await db.schema.alterTable(table).addColumn('lease_until', 'bigint').execute();
  }
  await sql`update deployments set lease_until = 0 where status in ('queued', 'in_progress')`.execute(db);
  await sql`update migrations_jobs set lease_until = 0 where status in ('pending', 'copying')`.execute(db);
}
