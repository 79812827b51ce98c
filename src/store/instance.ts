import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { DATABASE_FILE } from './db.js';
import { SETTING_KEYS } from './settings.js';

/**
 * What a data directory (or a PostgreSQL store) holds, found without creating or migrating
 * anything, so that a mistyped --data is refused before openStore makes an empty store there.
 * - instance: a store that `berth init` (or serve's first start) has initialized;
 * - empty: nothing yet (no directory, an empty one, or a database without berth's tables);
 * - uninitialized: berth's store without an instance (made by an older berth, or a failed init);
 * - foreign: a directory that holds other files and no berth store.
 */
export type InstanceState = 'instance' | 'empty' | 'uninitialized' | 'foreign';

export async function probeInstance(dataDir: string, databaseUrl: string | null): Promise<InstanceState> {
  return databaseUrl ? probePostgres(databaseUrl) : probeSqlite(dataDir);
}

function probeSqlite(dataDir: string): InstanceState {
  const file = path.join(dataDir, DATABASE_FILE);
  if (!fs.existsSync(file)) {
    let entries: string[];
    try {
      entries = fs.readdirSync(dataDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'empty';
      throw err;
    }
    return entries.length === 0 ? 'empty' : 'foreign';
  }
  // Read-only: opening must not create, convert or lock anything a running serve uses.
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const hasTable = db.prepare("select 1 from sqlite_master where type = 'table' and name = 'settings'").get();
    if (!hasTable) return 'uninitialized';
    const row = db.prepare('select value from settings where key = ?').get(SETTING_KEYS.rootTeamId) as { value: string | null } | undefined;
    return row?.value ? 'instance' : 'uninitialized';
  } finally {
    db.close();
  }
}

async function probePostgres(url: string): Promise<InstanceState> {
  // A plain require, as openStore's: the shipped bundle runs in a vm.Script.
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    throw new Error(`Cannot reach the PostgreSQL store (DATABASE_URL): ${(err as Error).message}`);
  }
  try {
    const t = await client.query<{ t: string | null }>("select to_regclass('settings')::text as t");
    if (!t.rows[0]?.t) return 'empty';
    const r = await client.query<{ value: string | null }>('select value from settings where key = $1', [SETTING_KEYS.rootTeamId]);
    return r.rows[0]?.value ? 'instance' : 'uninitialized';
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The one sentence every command but init says for a store with no instance. */
export function noInstanceMessage(dataDir: string, databaseUrl: string | null): string {
  return databaseUrl ? 'no berth instance in the PostgreSQL store (DATABASE_URL): run `berth init` or check DATABASE_URL' : `no berth instance in ${dataDir}: run \`berth init\` or check --data`;
}
