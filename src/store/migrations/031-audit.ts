import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * The audit log (issue 26): one row per call that changes something (or tried to), from every
 * door. Append-only: no operation updates or deletes a row; only the retention worker removes
 * rows older than the instance's audit_retention_days. Times are ISO-8601 UTC text, as elsewhere,
 * so they order as strings. No foreign keys: an entry outlives the token, user or resource it names.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('audit_log'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('team_id', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'integer')
    .addColumn('token_id', 'integer')
    .addColumn('oauth_client_id', 'text')
    .addColumn('source_ip', 'text')
    .addColumn('door', 'text', (c) => c.notNull())
    .addColumn('operation', 'text', (c) => c.notNull())
    // JSON array of the uuids the call named or made.
    .addColumn('targets', 'text', (c) => c.notNull())
    // JSON object of the arguments, secrets replaced; null when the call was refused before its input was read.
    .addColumn('arguments', 'text')
    .addColumn('result', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    // The deployment or migration the call started.
    .addColumn('started_uuid', 'text')
    .execute();
  await db.schema.createIndex('audit_log_team_id').on('audit_log').columns(['team_id', 'id']).execute();
  await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('audit_log').execute();
}
