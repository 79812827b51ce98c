import path from 'node:path';
import { type Command, Option } from 'commander';
import { loadConfig } from '../config/config.js';
import { BerthError } from '../errors.js';
import { openStore, type Db } from '../store/db.js';
import { noInstanceMessage, probeInstance } from '../store/instance.js';

/** What every `berth` command shares: --data, the one-line failure, the instance check, the store. */

export interface DataOpts {
  data: string;
  json?: boolean;
}

export const print = (opts: DataOpts, data: unknown, human: string) => console.log(opts.json ? JSON.stringify(data) : human);

/** One line saying why, then a non-zero exit. */
export function fail(err: unknown): never {
  if (err instanceof BerthError) {
    const fields = Object.entries(err.details.errors ?? {}).map(([f, msgs]) => `${f}: ${msgs.join(' ')}`);
    console.error(`berth: ${fields.length ? fields.join('; ') : err.message}`);
  } else {
    console.error(`berth: ${(err as Error).message}`);
  }
  process.exit(1);
}

/** Every command takes --data (env BERTH_DATA); commands that print data also take --json. */
export function command(parent: Command, name: string, description: string, json = true): Command {
  const c = parent.command(name).description(description).addOption(new Option('--data <dir>', 'data directory').env('BERTH_DATA').default('./.berth'));
  if (json) c.option('--json', 'print JSON');
  return c;
}

/** The store a command names: DATABASE_URL when set (PostgreSQL), else the file in --data (absolute). */
export function storeOf(opts: DataOpts): { dataDir: string; databaseUrl: string | null } {
  return { dataDir: path.resolve(opts.data), databaseUrl: loadConfig({ ...process.env, BERTH_DATA: opts.data }).databaseUrl };
}

/**
 * Refuses a store that holds no instance before anything opens it (opening creates and migrates):
 * a mistyped --data, BERTH_DATA or DATABASE_URL gets one line and leaves nothing behind.
 */
export async function requireInstance(opts: DataOpts): Promise<void> {
  const { dataDir, databaseUrl } = storeOf(opts);
  if ((await probeInstance(dataDir, databaseUrl)) !== 'instance') throw new Error(noInstanceMessage(dataDir, databaseUrl));
}

/** Runs an action on the store, closing it afterwards whatever happens; only init may start from no instance. */
export function withStore<O extends DataOpts>(fn: (db: Db, opts: O) => Promise<void>, { init = false } = {}) {
  return async (opts: O) => {
    let db: Db | undefined;
    try {
      if (!init) await requireInstance(opts);
      const { dataDir, databaseUrl } = storeOf(opts);
      db = await openStore(dataDir, databaseUrl);
      await fn(db, opts);
      await db.destroy();
    } catch (err) {
      await db?.destroy();
      fail(err);
    }
  };
}
