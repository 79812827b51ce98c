import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nowIso, openStore, type Db } from '../../src/store/db.js';
import { param, prepared } from '../../src/store/prepared.js';
import { tempDir } from '../helpers/server.js';

let db: Db;
beforeAll(async () => {
  db = await openStore(tempDir('berth-store-'));
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
