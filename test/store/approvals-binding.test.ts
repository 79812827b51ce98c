import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE, migrationsUpTo, openStore, type Db } from '../../src/store/db.js';
import { setMigrationDialect } from '../../src/store/portable.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';

/**
 * Migration 033 (only a person approves, issue 39): a call held before it gets the hash of its
 * stored input's canonical JSON, so a person can still approve it and it runs with those
 * arguments only. On the store BERTH_TEST_STORE names.
 */

const dataDir = tempDir('berth-approvals-binding-');
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function storeAt032(url: string | null): Promise<Db> {
  setMigrationDialect(url ? 'postgres' : 'sqlite');
  const db = new Kysely<never>({
    dialect: url ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) : new SqliteDialect({ database: new SQLite(path.join(dataDir, DATABASE_FILE)) }),
  }) as unknown as Db;
  const { error } = await new Migrator({ db, provider: migrationsUpTo('032-audit-lean'), allowUnorderedMigrations: true }).migrateToLatest();
  if (error) throw error;
  return db;
}

describe('approvals migration 033', () => {
  it('gives the calls held before it the hash of their canonical arguments', async () => {
    const url = storeUrlFor(dataDir, { empty: true });
    const old = await storeAt032(url);
    const at = '2026-11-20T10:00:00.000Z';
    const team = await old.insertInto('teams').values({ name: 'held', personal_team: 0, created_at: at, updated_at: at }).returning('id').executeTakeFirstOrThrow();
    // Keys out of order at two depths: the hash is of the canonical form, whatever order they were stored in.
    const input = '{"uuid":"p1","options":{"b":[1,{"z":true,"a":null}],"a":"x"}}';
    const row = {
      team_id: team.id,
      token_id: 1,
      user_id: 1,
      oauth_client_id: null,
      operation: 'delete_project',
      rule: 'delete',
      target: 'p1',
      shown_input: input,
      permissions: '["write"]',
      source_ip: '127.0.0.1',
    };
    const times = { decided_by_user_id: null, decided_via: null, decided_at: null, result: null, error: null, created_at: at, expires_at: at };
    await (old as unknown as Kysely<{ approvals: Record<string, unknown> }>)
      .insertInto('approvals')
      .values([
        { uuid: 'a'.repeat(24), input, status: 'pending', ...row, ...times },
        { uuid: 'b'.repeat(24), input: '{"uuid":"p2"}', status: 'denied', ...row, ...times },
      ])
      .execute();
    await old.destroy();

    const db = await openStore(dataDir, url);
    try {
      const rows = await db.selectFrom('approvals').select(['uuid', 'args_hash']).orderBy('uuid').execute();
      const sha = (s: string) => createHash('sha256').update(s).digest('hex');
      expect(rows).toEqual([
        { uuid: 'a'.repeat(24), args_hash: sha('{"options":{"a":"x","b":[1,{"a":null,"z":true}]},"uuid":"p1"}') },
        { uuid: 'b'.repeat(24), args_hash: sha('{"uuid":"p2"}') },
      ]);
    } finally {
      await db.destroy();
    }
  });
});
