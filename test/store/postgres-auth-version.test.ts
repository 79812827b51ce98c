/**
 * PostgreSQL's auth counter (migration 020): every commit that changes a token, a membership, a
 * setting or a team moves it forward once, whoever makes it; last_used_at writes, other tables
 * and rolled-back transactions do not. Reuse on PostgreSQL is refused for queries that read other
 * tables. (PostgreSQL only: the SQLite run leaves postgres-* files out.)
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { openStore, type Db } from '../../src/store/db.js';
import { param, prepared } from '../../src/store/prepared.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';

let db: Db;
let owner: Awaited<ReturnType<typeof admin.initInstance>>;
beforeAll(async () => {
  const dir = tempDir('berth-authv-');
  db = await openStore(dir, storeUrlFor(dir));
  owner = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
});
afterAll(() => db?.destroy());

const version = async () => Number((await sql<{ v: number }>`select v from auth_version where id = 1`.execute(db)).rows[0]!.v);

describe('the auth counter', () => {
  it('moves once per commit that changes auth rows, by berth or by plain SQL', async () => {
    let v = await version();
    const t = await admin.createToken(db, { email: 'owner@example.test', team: String(owner.team.id), name: 'x', permissions: ['read'], expires: 'never' });
    expect(await version()).toBe(++v);
    await db.transaction().execute(async (trx) => {
      await trx.updateTable('api_tokens').set({ permissions: '["write"]' }).where('id', '=', t.id).execute();
      await trx.updateTable('settings').set({ value: 'false' }).where('key', '=', 'mcp_enabled').execute();
      await trx.updateTable('teams').set({ description: 'd' }).where('id', '=', owner.team.id).execute();
    });
    expect(await version()).toBe(++v);
    await sql`delete from team_members where user_id = -1`.execute(db); // no row: nothing to count
    expect(await version()).toBe(v);
    await admin.revokeToken(db, t.id);
    expect(await version()).toBe(++v);
  });

  it('stays for last_used_at, other tables and rolled-back transactions', async () => {
    const v = await version();
    await db.updateTable('api_tokens').set({ last_used_at: new Date().toISOString() }).execute();
    await admin.createUser(db, { email: `u-${Date.now()}@example.test` });
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.updateTable('settings').set({ value: 'true' }).where('key', '=', 'mcp_enabled').execute();
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await version()).toBe(v);
  });

  it('is the only judge of reuse, so reuse is refused for a query reading other tables', async () => {
    expect(() => prepared(db, (q) => q.selectFrom('users').selectAll().where('id', '=', param('id')), { reuse: true })).toThrow(/users/);
    const byId = prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true });
    const first = await byId({ id: owner.team.id });
    expect(await byId({ id: owner.team.id })).toBe(first);
    await sql`update teams set name = 'moved on' where id = ${owner.team.id}`.execute(db);
    expect((await byId({ id: owner.team.id }))[0]!.name).toBe('moved on');
  });
});
