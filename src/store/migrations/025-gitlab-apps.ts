import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/** A team's GitLab app records (Coolify's /gitlab-apps): kept and listed; client_secret and webhook_token are secrets. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('gitlab_apps'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('html_url', 'text', (c) => c.notNull())
    .addColumn('api_url', 'text', (c) => c.notNull())
    .addColumn('custom_user', 'text', (c) => c.notNull())
    .addColumn('custom_port', 'integer', (c) => c.notNull())
    .addColumn('group_name', 'text')
    .addColumn('client_id', 'text')
    .addColumn('client_secret', 'text')
    .addColumn('webhook_token', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}
