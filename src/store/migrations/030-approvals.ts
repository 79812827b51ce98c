import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Approvals (issue 26): a team's policy of which agent calls wait for a person, and each call held
 * for one. The held call keeps its validated input whole (it is re-run as it was asked) beside a
 * redacted copy, the only one any answer shows. status moves once out of 'pending', by one
 * conditional UPDATE, so a call runs at most once whichever instance approves it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('approval_policies')
    .addColumn('team_id', 'integer', (c) => c.primaryKey().references('teams.id').onDelete('cascade'))
    // JSON array: operation names and classes (delete, migrate, stop, production_env).
    .addColumn('rules', 'text', (c) => c.notNull())
    .addColumn('expires_in_seconds', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await autoId(db.schema.createTable('approvals'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    // No foreign key: a revoked token's approval stays on record (and never runs).
    .addColumn('token_id', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'integer', (c) => c.notNull())
    .addColumn('oauth_client_id', 'text')
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('rule', 'text', (c) => c.notNull())
    .addColumn('target', 'text')
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('shown_input', 'text', (c) => c.notNull())
    // The caller's permissions when it asked (OAuth scopes narrow them; they are not stored elsewhere).
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('source_ip', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('decided_by_user_id', 'integer')
    .addColumn('decided_via', 'text')
    .addColumn('decided_at', 'text')
    .addColumn('result', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('approvals_team_status').on('approvals').columns(['team_id', 'status']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['approvals', 'approval_policies']) await db.schema.dropTable(t).execute();
}
