import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  Migrator,
  PostgresDialect,
  PostgresDriver,
  sql,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type Migration,
  type MigrationProvider,
  type PostgresDialectConfig,
  type SqliteDialectConfig,
  type TransactionSettings,
} from 'kysely';
import type { Database } from './schema.js';
import { BerthError } from '../errors.js';
import { setMigrationDialect } from './portable.js';
import * as m001 from './migrations/001-identity.js';
import * as m002 from './migrations/002-platform.js';
import * as m003 from './migrations/003-ssh-servers.js';
import * as m006 from './migrations/006-live-migration.js';
import * as m007 from './migrations/007-job-leases.js';
import * as m008 from './migrations/008-tags.js';
import * as m014 from './migrations/014-notifications.js';
import * as m015 from './migrations/015-docker-cleanup.js';
import * as m016 from './migrations/016-s3-storages.js';
import * as m017 from './migrations/017-cloud-init-scripts.js';
import * as m018 from './migrations/018-volume-backups.js';
import * as m019 from './migrations/019-observed-state.js';
import * as m020 from './migrations/020-auth-version.js';
import * as m021 from './migrations/021-migration-leftovers.js';
import * as m022 from './migrations/022-migration-start.js';
import * as m023 from './migrations/023-scheduled-tasks.js';
import * as m024 from './migrations/024-git-sources-rollback.js';
import * as m025 from './migrations/025-gitlab-apps.js';
import * as m026 from './migrations/026-migration-start-deployment.js';
import * as m027 from './migrations/027-console.js';
import * as m028 from './migrations/028-oauth.js';
import * as m029 from './migrations/029-file-storages.js';
import * as m030 from './migrations/030-approvals.js';
import * as m031 from './migrations/031-audit.js';
import * as m032 from './migrations/032-audit-lean.js';
import * as m033 from './migrations/033-approvals-binding.js';
import * as m034 from './migrations/034-backup-restores.js';
import * as m041 from './migrations/041-server-proxy.js';
import * as m042 from './migrations/042-swarm.js';
import * as m043 from './migrations/043-additional-destinations.js';
import * as m044 from './migrations/044-log-drains.js';
import * as m045 from './migrations/045-application-previews.js';
import * as m035 from './migrations/035-mcp-tasks.js';
import * as m039 from './migrations/039-server-transfer.js';
import { authVersionOf, registerAuthVersion } from './auth-version.js';
import { carryCommits, commitText, takePending } from './with-commit.js';

import * as m009 from './migrations/009-shared-variables.js';

import * as m011 from './migrations/011-backups.js';

/** Migrations are compiled in (no directory scan), so the built package is self-contained. */
const migrations: Record<string, Migration> = {
  '001-identity': m001,
  '002-platform': m002,
  '003-ssh-servers': m003,
  '006-live-migration': m006,
  '007-job-leases': m007,
  '008-tags': m008,
  '014-notifications': m014,
  '015-docker-cleanup': m015,
  '016-s3-storages': m016,
  '017-cloud-init-scripts': m017,
  '018-volume-backups': m018,
  '019-observed-state': m019,
  '020-auth-version': m020,
  '021-migration-leftovers': m021,
  '022-migration-start': m022,
  '023-scheduled-tasks': m023,
  '024-git-sources-rollback': m024,
  '025-gitlab-apps': m025,
  '026-migration-start-deployment': m026,
  '027-console': m027,
  '028-oauth': m028,
  '029-file-storages': m029,
  '030-approvals': m030,
  '031-audit': m031,
  '032-audit-lean': m032,
  '033-approvals-binding': m033,
  '034-backup-restores': m034,
  '035-mcp-tasks': m035,
  '039-server-transfer': m039,
  '041-server-proxy': m041,
  '042-swarm': m042,
  '043-additional-destinations': m043,
  '044-log-drains': m044,
  '045-application-previews': m045,

  '009-shared-variables': m009,

  '011-backups': m011,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** The migrations up to and including a name (a test's store as an older berth left it). */
export const migrationsUpTo = (last: string): MigrationProvider => ({
  getMigrations: async () => Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= last)),
});

export type Db = Kysely<Database>;

export const DATABASE_FILE = 'berth.sqlite';

/**
 * Opens the store and brings its schema up to date: the PostgreSQL database named by
 * databaseUrl, or else (creating it if needed) the embedded SQLite file in dataDir.
 */
export async function openStore(dataDir: string, databaseUrl: string | null = null, timeoutMs = DEFAULT_STORE_TIMEOUT_MS): Promise<Db> {
  const db = databaseUrl ? await openPostgres(databaseUrl, timeoutMs) : openSqlite(dataDir);
  setMigrationDialect(databaseUrl ? 'postgres' : 'sqlite');
  if (await migratedExactly(db)) return db;
  // Several instances starting at once migrate one after another (Kysely locks on PostgreSQL).
  // Migrations are independent tables and columns; one written on a branch may land after a
  // higher-numbered one that a store has already run, and must still run there.
  const { error, results } = await new Migrator({ db, provider, allowUnorderedMigrations: true }).migrateToLatest();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Store migration ${failed} failed: ${(error as Error).message}`);
  }
  return db;
}

/**
 * Whether the store has run exactly this build's migrations: then the Migrator, which takes its
 * lock, reads its tables and sorts the names with ICU (a sixth of a cold `berth mcp` before its
 * first answer), has nothing to do. Kysely records a migration in the transaction that runs it,
 * so a name present is a migration done; any difference (pending, or a store written by a newer
 * build, which the Migrator refuses) goes to the Migrator as before.
 */
async function migratedExactly(db: Db): Promise<boolean> {
  let done: Set<string>;
  try {
    done = new Set((await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows.map((r) => r.name));
  } catch {
    return false; // a new store: no table yet
  }
  const names = Object.keys(migrations);
  return done.size === names.length && names.every((n) => done.has(n));
}

function openSqlite(dataDir: string): Db {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, DATABASE_FILE);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // WAL makes NORMAL durable against process crashes; only an OS crash can lose the last commit.
  sqlite.pragma('synchronous = NORMAL');
  // A checkpoint (two fsyncs) runs inside the commit that crosses this many WAL pages. At
  // SQLite's 1,000 (4 MB) it was most of what an audit entry's ~5 extra pages per change cost
  // (bench/audit); 4,000 pages (16 MB of WAL at most, between checkpoints) fsyncs a quarter as often.
  sqlite.pragma('wal_autocheckpoint = 4000');
  const versions = new StoreVersions(sqlite);
  const cached = withStatementCache(sqlite, versions);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: cached }) });
  directStores.set(db, {
    // Only between transactions: a Kysely transaction holds this one connection across awaits,
    // and a synchronous read in that window would see its uncommitted rows.
    all: (sql, parameters) => (sqlite.inTransaction ? undefined : (cached.prepare(sql).all(...(parameters as unknown[])) as unknown[])),
    version: () => (sqlite.inTransaction ? undefined : versions.current()),
  });
  return db;
}

/**
 * PostgreSQL through the pg driver, loaded only here: the embedded default never pays for it.
 * Counts (int8) come back as numbers, as SQLite's do; no count berth makes nears 2^53.
 */
async function openPostgres(url: string, timeoutMs: number): Promise<Db> {
  // A plain require: the shipped bundle runs in a vm.Script, where import() of a package fails.
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  const types = { getTypeParser: (oid: number, format?: string) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format as never)) };
  // A server that accepts but does not answer (frozen, overloaded) fails the query after
  // timeoutMs (503, "Query read timeout"), instead of holding the request for ever.
  const pool = new pg.Pool({ connectionString: url, types: types as never, max: 10, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, idleTimeoutMillis: 30_000 });
  // A connection the server drops must not take the process down (an 'error' event without a
  // listener throws): an idle one is the pool's to replace; a checked-out one also fails its
  // query, which the request answers with 503, and is released.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
    dropOnTimeout(client);
  });
  const db = new Kysely<Database>({ dialect: new KeepErrorPostgresDialect({ pool }, pg.escapeLiteral) });
  try {
    await sql`select 1`.execute(db);
  } catch (err) {
    await db.destroy();
    throw new Error(`Cannot reach the PostgreSQL store (DATABASE_URL): ${(err as Error).message}`);
  }
  registerAuthVersion(db, authVersionOf(pool));
  return db;
}

/** BERTH_STORE_TIMEOUT_MS's default. */
export const DEFAULT_STORE_TIMEOUT_MS = 5_000;

/**
 * A query that timed out was sent: its answer, if it ever comes, would be read as the answer to
 * the connection's next query. The connection is closed instead (the pool replaces it).
 */
function dropOnTimeout(client: import('pg').PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const r = query(...args);
    if (r instanceof Promise) {
      r.catch((err: unknown) => {
        if ((err as Error | null)?.message === 'Query read timeout') (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      });
    }
    return r;
  };
}

/**
 * Transactions take the write lock at BEGIN (`BEGIN IMMEDIATE`). With Kysely's plain `BEGIN`, a
 * transaction that reads and then writes fails at once with SQLITE_BUSY when another process
 * (the CLI, `berth mcp`, another `serve`) committed in between, whatever busy_timeout says; with
 * the lock taken first, the other writer waits for busy_timeout instead.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * Kysely rolls back after a failed transaction and throws the rollback's own error if that fails
 * too, replacing the one that explains the failure: a connection PostgreSQL dropped mid-request
 * then read as an unknown 500 instead of the 503 its first error says. A rollback that fails
 * on PostgreSQL leaves nothing to undo (the server ends the transaction with the connection, and
 * the pool drops a broken client), so its error is dropped and the original one answers.
 */
async function quietRollback(rollback: () => Promise<void>): Promise<void> {
  try {
    await rollback();
  } catch {
    // The original error is what the caller needs; see above.
  }
}

/**
 * PostgresDriver that keeps the original error (quietRollback) and sends what withCommit left
 * for a transaction together with its COMMIT, in one round trip (src/store/with-commit.ts).
 */
class KeepErrorPostgresDriver extends PostgresDriver {
  constructor(
    settings: PostgresDialectConfig,
    private readonly escapeLiteral: (s: string) => string,
  ) {
    super(settings);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    carryCommits(connection);
    return connection;
  }

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    // Nothing left over from a transaction that ended without commit or rollback rides on this one.
    takePending(connection);
    await super.beginTransaction(connection, settings);
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const carried = takePending(connection);
    if (!carried) return super.commitTransaction(connection);
    await connection.executeQuery(CompiledQuery.raw(commitText(carried, this.escapeLiteral)));
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    takePending(connection);
    await quietRollback(() => super.rollbackTransaction(connection));
  }
}

class KeepErrorPostgresDialect extends PostgresDialect {
  constructor(
    private readonly settings: PostgresDialectConfig,
    private readonly escapeLiteral: (s: string) => string,
  ) {
    super(settings);
  }

  override createDriver(): Driver {
    return new KeepErrorPostgresDriver(this.settings, this.escapeLiteral);
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): SqliteDriver {
    return new ImmediateSqliteDriver(this.settings);
  }
}

/**
 * Kysely's SQLite driver prepares every query anew; preparing was the largest single cost of an
 * authenticated request. The same SQL text reuses its prepared statement (bounded; better-sqlite3
 * statements are safe to reuse because execution is synchronous). A statement that can write
 * counts as a write of this connection once it has run (see StoreVersions).
 */
function withStatementCache(sqlite: SQLite.Database, versions: StoreVersions, max = 500) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare: (sql: string) => {
      let stmt = cache.get(sql);
      if (!stmt) {
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        stmt = sqlite.prepare(sql);
        cache.set(sql, (stmt = stmt.readonly ? stmt : versions.countingWrites(stmt)));
      }
      return stmt;
    },
  };
}

/** Identifies one state of the store; equal versions mean no commit happened in between. */
export interface StoreVersion {
  /** PRAGMA data_version: changes when another connection (any process) commits. */
  readonly others: number;
  /** Statements that could write run by this connection (data_version does not see them). */
  readonly own: number;
}

/**
 * When the store last changed, cheaply: `PRAGMA data_version` plus a counter of this connection's
 * own writes (data_version does not see those). A value derived from rows read at version V is
 * still right at version V, so hot lookups can reuse it without letting a committed revocation
 * (by this process, the CLI or another berth process on the same file) outlive its commit.
 * The pragma is checked on every call: it is a read transaction of its own (a few µs, most of
 * it file-lock system calls) but reads no table. Sharing one check across the calls of an
 * event-loop turn was tried and dropped: code that commits through another connection and then
 * reads in the same turn would not see its own commit.
 */
class StoreVersions {
  private own = 0;
  private readonly dataVersion: SQLite.Statement<[], number>;

  constructor(sqlite: SQLite.Database) {
    this.dataVersion = sqlite.prepare<[], number>('PRAGMA data_version').pluck();
  }

  current(): StoreVersion {
    return { others: this.dataVersion.get()!, own: this.own };
  }

  /** The statement, counting each run as a write once it has run (whether it changed rows or not). */
  countingWrites(stmt: SQLite.Statement): SQLite.Statement {
    const counted =
      <A extends unknown[], R>(f: (...a: A) => R) =>
      (...a: A): R => {
        try {
          return f(...a);
        } finally {
          this.own++;
        }
      };
    const versions = this;
    // A streamed statement writes while it is iterated: count each step, and the end.
    function* iterate(...a: unknown[]) {
      try {
        for (const row of stmt.iterate(...a)) {
          versions.own++;
          yield row;
        }
      } finally {
        versions.own++;
      }
    }
    return Object.assign(Object.create(stmt) as SQLite.Statement, {
      run: counted(stmt.run.bind(stmt)),
      all: counted(stmt.all.bind(stmt)),
      get: counted(stmt.get.bind(stmt)),
      iterate,
    });
  }
}

export const sameVersion = (a: StoreVersion, b: StoreVersion): boolean => a.others === b.others && a.own === b.own;

/**
 * A synchronous way into a store, where the driver has one (SQLite): the hottest lookups skip the
 * async driver plumbing, and may reuse rows read at the current version. Both answer undefined
 * while a transaction holds the connection.
 */
export interface DirectStore {
  all(sql: string, parameters: readonly unknown[]): unknown[] | undefined;
  version(): StoreVersion | undefined;
}
const directStores = new WeakMap<Db, DirectStore>();
export const directStoreOf = (db: Db): DirectStore | undefined => directStores.get(db);

/** One trivial query: the store answers (a readiness check). */
/**
 * Readiness answers within this (issue 28: /api/ready within 100 ms with the store away): a
 * PostgreSQL host that stops answering without refusing would hold `select 1` for the pool's
 * connect timeout, or for ever on an open connection, and a load balancer's check would time out
 * instead of reading "not ready".
 */
const READY_BOUND_MS = 80;
/** A probe slower than the bound still counts as ready when the store answered one this recently (slow, not gone). */
const READY_GRACE_MS = 2_000;
const probes = new WeakMap<Db, { running?: Promise<void>; lastOk: number }>();

/**
 * Whether the store answers `select 1`, within READY_BOUND_MS: one probe at a time per store
 * (callers share it, so an unreachable host never piles probes up); past the bound it is
 * `store_unavailable` unless a probe succeeded within READY_GRACE_MS.
 */
export async function storeReachable(db: Db): Promise<void> {
  let p = probes.get(db);
  if (!p) probes.set(db, (p = { lastOk: 0 }));
  const state = p;
  state.running ??= sql`select 1`
    .execute(db)
    .then(() => {
      state.lastOk = Date.now();
    })
    .finally(() => (state.running = undefined));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, READY_BOUND_MS, 'late')));
  try {
    if ((await Promise.race([state.running, late])) === 'late' && Date.now() - state.lastOk > READY_GRACE_MS) throw new BerthError('store_unavailable');
  } finally {
    clearTimeout(timer);
  }
}

export const nowIso = (): string => new Date().toISOString();
