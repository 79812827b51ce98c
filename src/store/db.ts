import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Migration, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { setMigrationDialect } from './portable.js';
import * as m001 from './migrations/001-identity.js';
import * as m002 from './migrations/002-platform.js';

/** Migrations are compiled in (no directory scan), so the built package is self-contained. */
const migrations: Record<string, Migration> = {
  '001-identity': m001,
  '002-platform': m002,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

export type Db = Kysely<Database>;

export const DATABASE_FILE = 'berth.sqlite';

/** Opens (creating if needed) the embedded store in dataDir and brings its schema up to date. */
export async function openStore(dataDir: string): Promise<Db> {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, DATABASE_FILE);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // WAL makes NORMAL durable against process crashes; only an OS crash can lose the last commit.
  sqlite.pragma('synchronous = NORMAL');
  const cached = withStatementCache(sqlite);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) });
  // Only between transactions: a Kysely transaction holds this one connection across awaits,
  // and a synchronous read in that window would see its uncommitted rows.
  directExecutors.set(db, (sql, parameters) => (sqlite.inTransaction ? undefined : (cached.prepare(sql).all(...(parameters as unknown[])) as unknown[])));
  setMigrationDialect('sqlite');
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Store migration ${failed} failed: ${(error as Error).message}`);
  }
  return db;
}

/**
 * Kysely's SQLite driver prepares every query anew; preparing was the largest single cost of an
 * authenticated request. The same SQL text reuses its prepared statement (bounded; better-sqlite3
 * statements are safe to reuse because execution is synchronous).
 */
function withStatementCache(sqlite: SQLite.Database, max = 500) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare: (sql: string) => {
      let stmt = cache.get(sql);
      if (!stmt) {
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        cache.set(sql, (stmt = sqlite.prepare(sql)));
      }
      return stmt;
    },
  };
}

/**
 * A synchronous way to run a compiled statement on a store, where the driver has one (SQLite):
 * the hottest lookups skip the async driver plumbing. Compiled by Kysely either way.
 */
export type DirectExecutor = (sql: string, parameters: readonly unknown[]) => unknown[] | undefined;
const directExecutors = new WeakMap<Db, DirectExecutor>();
export const directExecutorOf = (db: Db): DirectExecutor | undefined => directExecutors.get(db);

export const nowIso = (): string => new Date().toISOString();
