import type { Kysely } from 'kysely';

/**
 * Docker Swarm (docs/decisions/swarm.md): what validate read of a server's swarm state (Coolify's
 * is_swarm_manager / is_swarm_worker, 0/1), and a destination's engine kind (Coolify's `type`:
 * `standalone` containers or `swarm` services on an overlay network).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('servers')
    .addColumn('is_swarm_manager', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('servers')
    .addColumn('is_swarm_worker', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('destinations')
    .addColumn('type', 'text', (c) => c.notNull().defaultTo('standalone'))
    .execute();
}
