import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE, migrationsUpTo, openStore, type Db } from '../../src/store/db.js';
import { setMigrationDialect } from '../../src/store/portable.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';

/**
 * Migration 032 (fewer pages per audit entry): a store with entries, as berth left it at 031,
 * keeps every entry as it was; new entries follow them; the uuid index is gone (the page each
 * insert wrote at random). On the store BERTH_TEST_STORE names.
 */

const dataDir = tempDir('berth-audit-lean-');
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

const entry = (i: number) => ({
  uuid: `entry${i}`.padEnd(24, 'x'),
  at: `2026-11-2${i}T10:00:00.000Z`,
  team_id: 1,
  user_id: 2,
  token_id: i,
  oauth_client_id: null,
  source_ip: '127.0.0.1',
  door: 'rest' as const,
  operation: 'update_project',
  targets: '["abc"]',
  arguments: `{"description":"d${i}"}`,
  result: 'ok',
  status: 201,
  duration_ms: i,
  started_uuid: null,
});

async function storeAt031(url: string | null): Promise<Db> {
  setMigrationDialect(url ? 'postgres' : 'sqlite');
  const db = new Kysely<never>({
    dialect: url ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) : new SqliteDialect({ database: new SQLite(path.join(dataDir, DATABASE_FILE)) }),
  }) as unknown as Db;
  const { error } = await new Migrator({ db, provider: migrationsUpTo('031-audit'), allowUnorderedMigrations: true }).migrateToLatest();
  if (error) throw error;
  return db;
}

async function uuidIndexes(db: Db): Promise<string[]> {
  if (TEST_STORE === 'postgres') {
    const r = await sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE tablename = 'audit_log'`.execute(db);
    return r.rows.map((x) => x.indexdef).filter((d) => /\(uuid\)/.test(d));
  }
  const list = await sql<{ name: string }>`SELECT name FROM pragma_index_list('audit_log')`.execute(db);
  const out: string[] = [];
  for (const { name } of list.rows) {
    const cols = await sql<{ name: string }>`SELECT name FROM pragma_index_info(${name})`.execute(db);
    if (cols.rows.some((c) => c.name === 'uuid')) out.push(name);
  }
  return out;
}

describe('audit log migration 032', () => {
  it('keeps the entries written before it, and the next ones follow them', async () => {
    const url = storeUrlFor(dataDir, { empty: true });
    const old = await storeAt031(url);
    for (const i of [1, 2, 3]) await old.insertInto('audit_log').values(entry(i)).execute();
    await old.deleteFrom('audit_log').where('token_id', '=', 1).execute();
    const before = await old.selectFrom('audit_log').selectAll().orderBy('id').execute();
    expect(await uuidIndexes(old)).toHaveLength(1);
    await old.destroy();

    const db = await openStore(dataDir, url);
    try {
      expect(await db.selectFrom('audit_log').selectAll().orderBy('id').execute()).toEqual(before);
      expect(await uuidIndexes(db)).toEqual([]);
      await db.insertInto('audit_log').values(entry(4)).execute();
      const ids = (await db.selectFrom('audit_log').select('id').orderBy('id').execute()).map((r) => r.id);
      expect(ids).toHaveLength(3);
      expect(ids[2]).toBeGreaterThan(ids[1]!);
    } finally {
      await db.destroy();
    }
  });
});
