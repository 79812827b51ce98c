import SQLite from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE, nowIso, openStore, type Db } from '../../src/store/db.js';
import { param, prepared } from '../../src/store/prepared.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';

let db: Db;
let dir: string;
beforeAll(async () => {
  dir = tempDir('berth-store-');
  db = await openStore(dir, storeUrlFor(dir));
});
afterAll(() => db.destroy());

describe('compiled hot queries', () => {
  it('return the same rows as the query builder', async () => {
    await db.insertInto('teams').values({ name: 'alpha', description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() }).execute();
    const byName = prepared(db, (q) => q.selectFrom('teams').selectAll().where('name', '=', param('name')));
    expect(await byName({ name: 'alpha' })).toEqual(await db.selectFrom('teams').selectAll().where('name', '=', 'alpha').execute());
    expect(await byName({ name: 'nobody' })).toEqual([]);
  });

  it('never read the uncommitted rows of a transaction that holds the connection', async () => {
    const byName = prepared(db, (q) => q.selectFrom('teams').selectAll().where('name', '=', param('name')));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const insertedYet = new Promise<void>((r) => (inserted = r));
    const trx = db.transaction().execute(async (t) => {
      await t.insertInto('teams').values({ name: 'ghost', description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() }).execute();
      inserted();
      await gate;
      throw new Error('roll back');
    });
    await insertedYet;
    const during = byName({ name: 'ghost' });
    release();
    await expect(trx).rejects.toThrow('roll back');
    expect(await during).toEqual([]);
  });
});

// Reuse rides on SQLite's synchronous path and PRAGMA data_version; PostgreSQL reads every time.
describe.runIf(TEST_STORE === 'sqlite')('reused rows', () => {
  const team = (name: string) => ({ name, description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() });

  it('are the same frozen rows while the store is unchanged', async () => {
    const { id } = (await db.insertInto('teams').values(team('steady')).returning('id').executeTakeFirstOrThrow());
    const byId = prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true });
    const first = await byId({ id });
    expect(await byId({ id })).toBe(first);
    expect(Object.isFrozen(first[0])).toBe(true);
    expect(await byId({ id: id + 1000 })).toEqual([]);
  });

  it('are read again after a write of this connection, even one that changed nothing', async () => {
    const { id } = (await db.insertInto('teams').values(team('before')).returning('id').executeTakeFirstOrThrow());
    const byId = prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true });
    const first = await byId({ id });
    await db.updateTable('teams').set({ name: 'after' }).where('id', '=', id).execute();
    expect((await byId({ id }))[0]!.name).toBe('after');
    const second = await byId({ id });
    await db.deleteFrom('teams').where('id', '=', -1).execute();
    expect(await byId({ id })).not.toBe(second);
    expect(first[0]!.name).toBe('before');
  });

  it("are read again after another connection's commit", async () => {
    const { id } = (await db.insertInto('teams').values(team('mine')).returning('id').executeTakeFirstOrThrow());
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

  it('are never taken from, or kept for, the inside of a transaction', async () => {
    const { id } = (await db.insertInto('teams').values(team('outside')).returning('id').executeTakeFirstOrThrow());
    const byId = prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true });
    await byId({ id });
    let during!: Promise<readonly { name: string }[]>;
    await expect(
      db.transaction().execute(async (t) => {
        await t.updateTable('teams').set({ name: 'inside' }).where('id', '=', id).execute();
        // A reader outside the transaction waits for the connection; it must not see (or keep)
        // the uncommitted name.
        during = byId({ id });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await during)[0]!.name).toBe('outside');
    expect((await byId({ id }))[0]!.name).toBe('outside');
  });
});
