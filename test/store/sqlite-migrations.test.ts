/**
 * Opening a store skips Kysely's Migrator only when the store has run exactly this build's
 * migrations (src/store/db.ts); any difference still goes to the Migrator. SQLite only (the
 * PostgreSQL run leaves sqlite-* files out; the same statement serves both dialects).
 */
import SQLite from 'better-sqlite3';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_FILE, openStore } from '../../src/store/db.js';
import { tempDir } from '../helpers/server.js';

const names = (dir: string) => {
  const file = new SQLite(path.join(dir, DATABASE_FILE), { readonly: true });
  try {
    return (file.prepare('select name from kysely_migration order by name').all() as { name: string }[]).map((r) => r.name);
  } finally {
    file.close();
  }
};

describe('opening a store', () => {
  it('migrates a new store, and opens a migrated one without changing what it ran', async () => {
    const dir = tempDir('berth-migrations-');
    const first = await openStore(dir);
    await first.destroy();
    const ran = names(dir);
    expect(ran.length).toBeGreaterThan(20);
    expect(ran).toContain('001-identity');
    const again = await openStore(dir);
    expect((await again.selectFrom('teams').select('id').execute()).length).toBe(0);
    await again.destroy();
    expect(names(dir)).toEqual(ran);
  });

  it('still refuses a store that ran a migration this build does not have (written by a newer berth)', async () => {
    const dir = tempDir('berth-migrations-');
    await (await openStore(dir)).destroy();
    const file = new SQLite(path.join(dir, DATABASE_FILE));
    file.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('999-from-a-newer-build', new Date().toISOString());
    file.close();
    await expect(openStore(dir)).rejects.toThrow(/999-from-a-newer-build/);
  });
});
