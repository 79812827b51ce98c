import { type Kysely, sql } from 'kysely';
import { migrationDialect } from '../portable.js';

/**
 * Fewer pages written per audit entry (bench/audit: on SQLite the entry's cost is the WAL pages
 * its commit writes). Two of them went: the unique index on the entry's uuid (a random key, so a
 * random page of its index per insert; nothing looks an entry up by it, and it is 24 characters
 * from the CSPRNG) and, on SQLite, AUTOINCREMENT (its sqlite_sequence row is one more page per
 * insert; without it a new id is still above every id kept, since retention removes the oldest).
 * An entry written before the change outlives it unchanged.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (migrationDialect() === 'postgres') {
    await sql`ALTER TABLE audit_log DROP CONSTRAINT IF EXISTS audit_log_uuid_key`.execute(db);
    return;
  }
  // SQLite can drop neither a column's UNIQUE nor AUTOINCREMENT in place: the table is rebuilt.
  await sql`CREATE TABLE audit_log_lean (
    id integer PRIMARY KEY,
    uuid text NOT NULL,
    at text NOT NULL,
    team_id integer NOT NULL,
    user_id integer,
    token_id integer,
    oauth_client_id text,
    source_ip text,
    door text NOT NULL,
    operation text NOT NULL,
    targets text NOT NULL,
    arguments text,
    result text NOT NULL,
    status integer NOT NULL,
    duration_ms integer NOT NULL,
    started_uuid text
  )`.execute(db);
  await sql`INSERT INTO audit_log_lean (id, uuid, at, team_id, user_id, token_id, oauth_client_id, source_ip, door, operation, targets, arguments, result, status, duration_ms, started_uuid)
    SELECT id, uuid, at, team_id, user_id, token_id, oauth_client_id, source_ip, door, operation, targets, arguments, result, status, duration_ms, started_uuid FROM audit_log`.execute(db);
  await sql`DROP TABLE audit_log`.execute(db);
  await sql`ALTER TABLE audit_log_lean RENAME TO audit_log`.execute(db);
  await db.schema.createIndex('audit_log_team_id').on('audit_log').columns(['team_id', 'id']).execute();
  await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
}

export async function down(): Promise<void> {
  // The constraint and AUTOINCREMENT are not restored: nothing depends on them.
}
