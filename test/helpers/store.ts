/**
 * Which store the suite runs on: the embedded SQLite file (default) or a real PostgreSQL server
 * (`BERTH_TEST_STORE=postgres`, started by test/global-setup.ts with scripts/postgres.sh).
 *
 * On PostgreSQL each data directory a test uses gets a database of its own, named after the
 * directory, so a `berth` process a test spawns with `--data DIR` and `storeEnv(DIR)` opens the
 * same store as the test's server.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_FILE } from '../../src/store/db.js';

export const TEST_STORE: 'sqlite' | 'postgres' = process.env.BERTH_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** The database test/global-setup.ts migrates once per run; each test database is a copy of it. */
export const PG_TEMPLATE = 'berth_template';
/** Where test/global-setup.ts says its migrated berth.sqlite is, on SQLite runs. */
export const SQLITE_TEMPLATE_ENV = 'BERTH_TEST_SQLITE_TEMPLATE';

const made = new Map<string, string>();

export interface StoreOptions {
  /**
   * A database without berth's tables (what a new DATABASE_URL is), for tests of a store nothing
   * has touched and of migrating one from nothing. Without it the database is a copy of the
   * migrated template: what openStore would make of an empty one, minus 30 migrations per test.
   * Only the first call for a directory decides.
   */
  empty?: boolean;
}

/** The DATABASE_URL of a data directory's store, or null on SQLite (the file in the directory). */
export function storeUrlFor(dataDir: string, opts: StoreOptions = {}): string | null {
  if (TEST_STORE !== 'postgres') return null;
  const admin = process.env.BERTH_TEST_PG_URL;
  if (!admin) throw new Error('BERTH_TEST_STORE=postgres without BERTH_TEST_PG_URL: the global setup did not start PostgreSQL');
  const dir = path.resolve(dataDir);
  let url = made.get(dir);
  if (url) return url;
  const name = `berth_${createHash('sha1').update(dir).digest('hex').slice(0, 24)}`;
  // Another test process may have made it already (a spawned CLI's directory): that is the same store.
  const create = opts.empty ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${PG_TEMPLATE}`;
  execFileSync('psql', [admin, '-qAt', '-v', 'ON_ERROR_STOP=0', '-c', create], { stdio: 'ignore' });
  url = admin.replace(/\/[^/?]*(\?.*)?$/, `/${name}`);
  made.set(dir, url);
  return url;
}

/** What a spawned `berth` needs in its environment to open a data directory's store. */
export function storeEnv(dataDir: string, opts: StoreOptions = {}): Record<string, string> {
  const url = storeUrlFor(dataDir, opts);
  return url ? { DATABASE_URL: url } : {};
}

/**
 * Gives a new data directory a migrated store with nothing in it, as openStore would make it: on
 * SQLite a copy of the run's template file (PostgreSQL test databases are copies already). For
 * servers a test starts in-process; the CLI's own tests keep making stores from nothing.
 */
export function seedStore(dataDir: string): void {
  const template = process.env[SQLITE_TEMPLATE_ENV];
  if (TEST_STORE !== 'sqlite' || !template) return;
  const file = path.join(dataDir, DATABASE_FILE);
  if (!fs.existsSync(file)) fs.copyFileSync(template, file);
}
