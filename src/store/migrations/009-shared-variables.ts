import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Shared environment variables (Coolify's): one table for the four scopes, team, project,
 * environment and server. `scope_id` is the id of the scope's own row (the team's id for team
 * variables), so one unique constraint holds a key once per scope on both stores (a unique index
 * over nullable columns would let NULLs repeat). The scope's own column references its row with
 * ON DELETE CASCADE, so deleting a team, project, environment or server takes its variables along.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('shared_environment_variables'))
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('scope_id', 'integer', (c) => c.notNull())
    .addColumn('project_id', 'integer', (c) => c.references('projects.id').onDelete('cascade'))
    .addColumn('environment_id', 'integer', (c) => c.references('environments.id').onDelete('cascade'))
    .addColumn('server_id', 'integer', (c) => c.references('servers.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text')
    .addColumn('is_literal', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_multiline', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_shown_once', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('comment', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('shared_env_key_per_scope', ['type', 'scope_id', 'key'])
    .execute();
  await db.schema.createIndex('shared_env_team').on('shared_environment_variables').columns(['team_id', 'type']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('shared_environment_variables').execute();
}
