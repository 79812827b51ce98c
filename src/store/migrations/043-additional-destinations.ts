import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * An application's additional destinations (Coolify's `additional_servers` pivot): the other
 * servers one application also runs a copy on. One row per application and destination, and one
 * per application and server (a second destination on a server the application already uses
 * would run a second copy under the same container names there): the unique constraints, not a
 * read before the insert, keep concurrent adds from making two. The server is the destination's,
 * copied so the constraint can see it. The copy's observed status is kept here; the
 * application's own columns stay the primary's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('application_destinations'))
    .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
    .addColumn('destination_id', 'integer', (c) => c.notNull().references('destinations.id'))
    .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id'))
    .addColumn('observed_status', 'text')
    .addColumn('observed_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('application_destinations_destination', ['resource_id', 'destination_id'])
    .addUniqueConstraint('application_destinations_server', ['resource_id', 'server_id'])
    .execute();
  await db.schema.createIndex('application_destinations_by_destination').on('application_destinations').column('destination_id').execute();
}
