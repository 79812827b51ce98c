import { sql, type Kysely } from 'kysely';
import { migrationDialect } from '../portable.js';

/**
 * PostgreSQL only: one counter row, `auth_version.v`, that every committed change to the rows a
 * request's authentication reads (tokens, memberships, settings) or that are reused with them
 * (teams) moves forward, by the database itself, whoever writes (any berth instance, the CLI,
 * psql). An instance may then reuse those rows while one cheap read of the counter says nothing
 * changed (src/store/auth-version.ts). SQLite needs none of this: `PRAGMA data_version` says the
 * same for the whole file.
 *
 * The triggers are deferred constraint triggers, so the counter's row lock is taken at commit,
 * after every other lock of the transaction: writers of different rows never deadlock on it, and
 * it is held only while they commit. A transaction bumps once, however many rows it changes.
 * `last_used_at` (written once a minute per token in use) does not count: nothing reuses it.
 */
export const AUTH_TABLES = {
  api_tokens: 'insert or delete or update of user_id, team_id, token_hash, permissions, expires_at',
  team_members: 'insert or delete or update',
  settings: 'insert or delete or update',
  teams: 'insert or delete or update',
} as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (migrationDialect() !== 'postgres') return;
  await sql`create table auth_version (id integer primary key check (id = 1), v bigint not null)`.execute(db);
  await sql`insert into auth_version (id, v) values (1, 0)`.execute(db);
  await sql`
    create function berth_bump_auth_version() returns trigger language plpgsql as $$
    begin
      if current_setting('berth.auth_bumped', true) is distinct from '1' then
        update auth_version set v = v + 1 where id = 1;
        perform set_config('berth.auth_bumped', '1', true);
      end if;
      return null;
    end $$`.execute(db);
  for (const [table, events] of Object.entries(AUTH_TABLES)) {
    await sql`
      create constraint trigger ${sql.id(`${table}_auth_version`)} after ${sql.raw(events)} on ${sql.table(table)}
      deferrable initially deferred for each row execute function berth_bump_auth_version()`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (migrationDialect() !== 'postgres') return;
  for (const table of Object.keys(AUTH_TABLES)) await sql`drop trigger ${sql.id(`${table}_auth_version`)} on ${sql.table(table)}`.execute(db);
  await sql`drop function berth_bump_auth_version()`.execute(db);
  await sql`drop table auth_version`.execute(db);
}
