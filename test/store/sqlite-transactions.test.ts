import SQLite from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE, nowIso, openStore, type Db } from '../../src/store/db.js';
import { tempDir } from '../helpers/server.js';

let db: Db;
let other: SQLite.Database;
beforeAll(async () => {
  const dir = tempDir('berth-trx-');
  db = await openStore(dir);
  // Another writer on the same file (what the CLI, `berth mcp` or another serve is), not waiting
  // for locks, so that who holds the write lock shows at once.
  other = new SQLite(path.join(dir, DATABASE_FILE));
  other.pragma('busy_timeout = 0');
});
afterAll(async () => {
  other.close();
  await db.destroy();
});

// SQLite's write lock (BEGIN IMMEDIATE) against a second connection to the file (SQLite only).
describe('transactions against another writer on the same store', () => {
  it('hold the write lock from BEGIN: a transaction that reads, then writes, is never cut off by a commit in between', async () => {
    let otherWrite: unknown;
    await db.transaction().execute(async (t) => {
      await t.selectFrom('teams').selectAll().execute();
      // With a plain BEGIN this commit would succeed, and the write below fail with SQLITE_BUSY.
      try {
        other.prepare("insert into settings (key, value) values ('probe', 'x')").run();
      } catch (err) {
        otherWrite = err;
      }
      await t.insertInto('teams').values({ name: 'after-read', description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() }).execute();
    });
    expect((otherWrite as { code?: string }).code).toBe('SQLITE_BUSY');
    expect(await db.selectFrom('teams').select('name').where('name', '=', 'after-read').execute()).toHaveLength(1);
    // Once the transaction has committed, the other writer gets through.
    other.prepare("insert into settings (key, value) values ('probe', 'x')").run();
    expect(await db.selectFrom('settings').select('key').where('key', '=', 'probe').execute()).toHaveLength(1);
  });
});
