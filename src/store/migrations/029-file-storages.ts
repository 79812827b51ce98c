import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * File storages (Coolify's `type: "file"`): a file, with its content, or a directory at a path in
 * a resource's container. The content lives here and is written into the container each time
 * the container is created, so it goes wherever the resource goes (migration included).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('file_storages'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
    .addColumn('mount_path', 'text', (c) => c.notNull())
    .addColumn('content', 'text')
    .addColumn('is_directory', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('file_storages_resource_mount', ['resource_id', 'mount_path'])
    .execute();
}
