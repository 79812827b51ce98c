import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/** Users, teams, memberships, API tokens, settings, the mail outbox and feedback. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();

  await autoId(db.schema.createTable('users'))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await autoId(db.schema.createTable('teams'))
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text')
    .addColumn('personal_team', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('team_members')
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('team_members_pk', ['team_id', 'user_id'])
    .execute();

  await autoId(db.schema.createTable('api_tokens'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_tokens_team').on('api_tokens').column('team_id').execute();
  await db.schema.createIndex('api_tokens_expires').on('api_tokens').column('expires_at').execute();

  await autoId(db.schema.createTable('outbox'))
    .addColumn('dedupe_key', 'text', (c) => c.notNull().unique())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'text')
    .execute();

  await autoId(db.schema.createTable('feedback'))
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('user_id', 'integer')
    .addColumn('team_id', 'integer')
    .addColumn('source_ip', 'text', (c) => c.notNull())
    .addColumn('forwarded_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['feedback', 'outbox', 'api_tokens', 'team_members', 'teams', 'users', 'settings']) {
    await db.schema.dropTable(t).execute();
  }
}
