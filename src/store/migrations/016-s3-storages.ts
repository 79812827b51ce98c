import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/** A team's S3-compatible storages (Coolify's s3-storages): where backups can be sent. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('s3_storages'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('region', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('is_usable', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}
