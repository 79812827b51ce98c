import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nowIso, openStore, type Db } from '../../src/store/db.js';
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

// Reuse on both stores: SQLite's data_version, PostgreSQL's auth counter (teams is a counted table).
describe('reused rows', () => {
  const team = (name: string) => ({ name, description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() });

  it('are read again after a write of this connection, even one that changed nothing', async () => {
    const { id } = await db.insertInto('teams').values(team('before')).returning('id').executeTakeFirstOrThrow();
    const byId = prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true });
    const first = await byId({ id });
    await db.updateTable('teams').set({ name: 'after' }).where('id', '=', id).execute();
    expect((await byId({ id }))[0]!.name).toBe('after');
    const second = await byId({ id });
    await db.deleteFrom('teams').where('id', '=', -1).execute();
    // SQLite counts this connection's writing statements; PostgreSQL's counter counts changed rows.
    if (TEST_STORE === 'sqlite') expect(await byId({ id })).not.toBe(second);
    else expect(await byId({ id })).toBe(second);
    expect(first[0]!.name).toBe('before');
  });

  it('are never taken from, or kept for, the inside of a transaction', async () => {
    const { id } = await db.insertInto('teams').values(team('outside')).returning('id').executeTakeFirstOrThrow();
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
