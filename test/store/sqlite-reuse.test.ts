/**
 * Reuse of rows read at an unchanged SQLite store: PRAGMA data_version and this connection's own
 * writes decide (src/store/db.ts). SQLite only (the PostgreSQL run leaves sqlite-* files out).
 */
import SQLite from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE, nowIso, openStore, type Db } from '../../src/store/db.js';
import { param, prepared } from '../../src/store/prepared.js';
import { tempDir } from '../helpers/server.js';

let db: Db;
let dir: string;
beforeAll(async () => {
  dir = tempDir('berth-store-');
  db = await openStore(dir);
});
afterAll(() => db.destroy());

describe('reused rows on SQLite', () => {
  const team = (name: string) => ({ name, description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() });

  it('are the same frozen rows while the store is unchanged', async () => {
    const { id } = await db.insertInto('teams').values(team('steady')).returning('id').executeTakeFirstOrThrow();
    const byId = prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true });
    const first = await byId({ id });
    expect(await byId({ id })).toBe(first);
    expect(Object.isFrozen(first[0])).toBe(true);
    expect(await byId({ id: id + 1000 })).toEqual([]);
  });

  it("are read again after another connection's commit", async () => {
    const { id } = await db.insertInto('teams').values(team('mine')).returning('id').executeTakeFirstOrThrow();
    const byId = prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true });
    expect((await byId({ id }))[0]!.name).toBe('mine');
    const other = new SQLite(path.join(dir, DATABASE_FILE));
    try {
      other.prepare('update teams set name = ? where id = ?').run('theirs', id);
    } finally {
      other.close();
    }
    expect((await byId({ id }))[0]!.name).toBe('theirs');
  });
});
