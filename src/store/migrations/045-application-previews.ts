import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Preview deployments (Coolify's application_previews; docs/decisions/previews.md): one row per
 * application and pull request, made by the first deploy with `pr`, gone with its DELETE or the
 * application's. It keeps the preview's domain (from the application's preview_url_template when
 * made), the image its last deploy built, and its observed status. Deployments say which pull
 * request they build (0: the application itself, Coolify's pull_request_id default).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('application_previews'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
    .addColumn('pull_request_id', 'integer', (c) => c.notNull())
    .addColumn('fqdn', 'text')
    .addColumn('image_tag', 'text')
    .addColumn('observed_status', 'text')
    .addColumn('observed_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('application_previews_pull_request', ['resource_id', 'pull_request_id'])
    .execute();
  await db.schema
    .alterTable('deployments')
    .addColumn('pull_request_id', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
