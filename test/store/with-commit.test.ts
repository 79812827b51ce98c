import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atomically } from '../../src/store/atomic.js';
import { nowIso, openStore, type Db } from '../../src/store/db.js';
import { commitText, withCommit } from '../../src/store/with-commit.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';

/**
 * Statements sent with a transaction's COMMIT (src/store/with-commit.ts; on PostgreSQL inlined as
 * literals into one simple-protocol query): what is stored must be exactly what a bound insert
 * stores, whatever the values hold, and only when the transaction commits.
 */

let db: Db;
let dir: string;
let teamId: number;
beforeAll(async () => {
  dir = tempDir('berth-with-commit-');
  db = await openStore(dir, storeUrlFor(dir));
  teamId = Number((await db.insertInto('teams').values({ name: 'wc', description: null, personal_team: 0, created_at: nowIso(), updated_at: nowIso() }).returning('id').executeTakeFirstOrThrow()).id);
});
afterAll(() => db.destroy());

const entry = (operation: string, args: string | null) => ({
  uuid: `u-${operation}`,
  at: nowIso(),
  team_id: teamId,
  user_id: null,
  token_id: 7,
  oauth_client_id: null,
  source_ip: '::1',
  door: 'rest' as const,
  operation,
  targets: '[]',
  arguments: args,
  result: 'ok',
  status: 201,
  duration_ms: 3,
  started_uuid: null,
});
const stored = (operation: string) => db.selectFrom('audit_log').selectAll().where('operation', '=', operation).execute();

// Quotes, backslashes (E'' on PostgreSQL), placeholders and statement breaks inside values.
const HOSTILE = [`it's`, `back\\slash\\`, `'); delete from audit_log; --`, `$1 $2 $$ $tag$`, `line\nbreak\ttab`, `ünïcødé ✓ 🚢`, `\\'`, `;\ncommit;\nrollback`, `E'x'`];

describe('statements sent with the commit', () => {
  it('store each value exactly as a bound insert would', async () => {
    const args = JSON.stringify({ name: HOSTILE, nested: { s: HOSTILE.join('') } });
    await atomically(db, async (trx) => {
      await trx.updateTable('teams').set({ description: 'changed' }).where('id', '=', teamId).execute();
      await withCommit(trx, trx.insertInto('audit_log').values(entry('wc_hostile', args)).compile());
    });
    await db.insertInto('audit_log').values(entry('wc_bound', args)).execute();
    const [deferred] = await stored('wc_hostile');
    const [bound] = await stored('wc_bound');
    expect(deferred?.arguments).toBe(args);
    const { id: _a, operation: _o, uuid: _u, at: _t, ...rest } = deferred!;
    const { id: _b, operation: _p, uuid: _v, at: _s, ...restBound } = bound!;
    expect(rest).toEqual(restBound);
    for (const v of HOSTILE) {
      await atomically(db, (trx) => withCommit(trx, trx.insertInto('audit_log').values(entry(`wc_one`, v)).compile()));
    }
    expect((await stored('wc_one')).map((r) => r.arguments)).toEqual(HOSTILE);
  });

  it('are dropped with a transaction that rolls back, and never ride on a later commit', async () => {
    await expect(
      atomically(db, async (trx) => {
        await withCommit(trx, trx.insertInto('audit_log').values(entry('wc_rolled_back', null)).compile());
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    // Several commits, so the pool hands out the connection the rolled-back one used.
    for (let i = 0; i < 12; i++)
      await atomically(db, (trx) =>
        trx
          .updateTable('teams')
          .set({ description: `d${i}` })
          .where('id', '=', teamId)
          .execute(),
      );
    expect(await stored('wc_rolled_back')).toEqual([]);
  });

  it('fail the commit when they fail, and the change rolls back with them', async () => {
    await expect(
      atomically(db, async (trx) => {
        await trx.updateTable('teams').set({ description: 'never' }).where('id', '=', teamId).execute();
        // team_id is NOT NULL: refused by the store, at the commit on PostgreSQL.
        await withCommit(
          trx,
          trx
            .insertInto('audit_log')
            .values({ ...entry('wc_refused', null), team_id: null as never })
            .compile(),
        );
      }),
    ).rejects.toThrow();
    expect((await db.selectFrom('teams').select('description').where('id', '=', teamId).executeTakeFirstOrThrow()).description).not.toBe('never');
    expect(await stored('wc_refused')).toEqual([]);
  });

  it('inline only plain values', () => {
    const q = (parameters: unknown[]) => ({ sql: 'insert into t (a) values ($1)', parameters, query: undefined as never, queryId: undefined as never });
    const esc = (s: string) => `'${s}'`;
    expect(commitText([q([1.5]), q([null]), q([true])], esc)).toBe('insert into t (a) values (1.5);\ninsert into t (a) values (null);\ninsert into t (a) values (true);\ncommit');
    expect(commitText([q([-2])], esc)).toBe('insert into t (a) values ((-2));\ncommit');
    expect(() => commitText([q([{}])], esc)).toThrow(/cannot inline/);
    expect(() => commitText([q([undefined])], esc)).toThrow(/cannot inline a value of type undefined/);
    expect(() => commitText([q(['a\0b'])], esc)).toThrow(/NUL/);
    expect(() => commitText([q([Number.NaN])], esc)).toThrow(/cannot inline/);
    expect(() => commitText([q([])], esc)).toThrow(/no parameter/);
  });
});
