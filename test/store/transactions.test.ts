import { spawn } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE, nowIso, openStore, type Db } from '../../src/store/db.js';
import { tempDir } from '../helpers/server.js';

let db: Db;
let dir: string;
beforeAll(async () => {
  dir = tempDir('berth-trx-');
  db = await openStore(dir);
});
afterAll(() => db.destroy());

/** Another process writing one row to the same store file, waiting for locks as berth does. */
function otherProcessWrites(key: string) {
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const src = `
    const SQLite = require(${JSON.stringify(sqlite)});
    const db = new SQLite(${JSON.stringify(path.join(dir, DATABASE_FILE))});
    db.pragma('busy_timeout = 5000');
    db.prepare("insert into settings (key, value) values (?, 'x')").run(${JSON.stringify(key)});`;
  const child = spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
  return { exited };
}

describe('transactions against writers in other processes', () => {
  it('a transaction that reads, then writes, commits although another process wrote meanwhile', async () => {
    let other!: ReturnType<typeof otherProcessWrites>;
    await db.transaction().execute(async (t) => {
      await t.selectFrom('teams').selectAll().execute();
      other = otherProcessWrites('probe-1');
      // Give the other process time to commit (plain BEGIN) or to queue behind our lock (BEGIN IMMEDIATE).
      await Promise.race([other.exited, new Promise((r) => setTimeout(r, 1_500))]);
      await t.insertInto('teams').values({ name: 'after-read', description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() }).execute();
    });
    expect(await other.exited).toEqual({ code: 0, stderr: '' });
    expect(await db.selectFrom('teams').select('name').where('name', '=', 'after-read').execute()).toHaveLength(1);
    expect(await db.selectFrom('settings').select('key').where('key', '=', 'probe-1').execute()).toHaveLength(1);
  });
});
