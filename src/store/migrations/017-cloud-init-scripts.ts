import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/** A team's cloud-init scripts (Coolify's): kept for provisioning servers with a cloud's first boot. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('cloud_init_scripts'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('script', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}
