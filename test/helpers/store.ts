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
import path from 'node:path';

export const TEST_STORE: 'sqlite' | 'postgres' = process.env.BERTH_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

const made = new Map<string, string>();

/** The DATABASE_URL of a data directory's store, or null on SQLite (the file in the directory). */
export function storeUrlFor(dataDir: string): string | null {
  if (TEST_STORE !== 'postgres') return null;
  const admin = process.env.BERTH_TEST_PG_URL;
  if (!admin) throw new Error('BERTH_TEST_STORE=postgres without BERTH_TEST_PG_URL: the global setup did not start PostgreSQL');
  const dir = path.resolve(dataDir);
  let url = made.get(dir);
  if (url) return url;
  const name = `berth_${createHash('sha1').update(dir).digest('hex').slice(0, 24)}`;
  // Another test process may have made it already (a spawned CLI's directory): that is the same store.
  execFileSync('psql', [admin, '-qAt', '-v', 'ON_ERROR_STOP=0', '-c', `CREATE DATABASE ${name}`], { stdio: 'ignore' });
  url = admin.replace(/\/[^/?]*(\?.*)?$/, `/${name}`);
  made.set(dir, url);
  return url;
}

/** What a spawned `berth` needs in its environment to open a data directory's store. */
export function storeEnv(dataDir: string): Record<string, string> {
  const url = storeUrlFor(dataDir);
  return url ? { DATABASE_URL: url } : {};
}
