import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Records Coolify clients read (GitHub apps, cloud provider tokens), kept per team with their
 * secrets; and the image tag a rollback deployment runs (null: an ordinary deploy builds or pulls).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('github_apps'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('organization', 'text')
    .addColumn('api_url', 'text', (c) => c.notNull())
    .addColumn('html_url', 'text', (c) => c.notNull())
    .addColumn('custom_user', 'text', (c) => c.notNull())
    .addColumn('custom_port', 'integer', (c) => c.notNull())
    .addColumn('app_id', 'integer', (c) => c.notNull())
    .addColumn('installation_id', 'integer', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_secret', 'text', (c) => c.notNull())
    .addColumn('webhook_secret', 'text')
    // A key in use by an app cannot be deleted (the store refuses; the door answers 409).
    .addColumn('private_key_id', 'integer', (c) => c.notNull().references('private_keys.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await autoId(db.schema.createTable('cloud_tokens'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('deployments').addColumn('rollback_tag', 'text').execute();
}
