import type { CreateTableBuilder } from 'kysely';

/**
 * Column helpers that keep one set of migrations valid for SQLite and PostgreSQL. The store sets
 * the dialect once before migrating, so migrations never branch on it themselves.
 */
let dialect: 'sqlite' | 'postgres' = 'sqlite';

export function setMigrationDialect(d: 'sqlite' | 'postgres'): void {
  dialect = d;
}

/** For the few migrations that exist on one store only (PostgreSQL triggers). */
export const migrationDialect = (): 'sqlite' | 'postgres' => dialect;

/** An auto-incrementing integer primary key named id. */
export function autoId<T extends string>(table: CreateTableBuilder<T, never>): CreateTableBuilder<T, 'id'> {
  return dialect === 'postgres' ? table.addColumn('id', 'serial', (c) => c.primaryKey()) : table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
}
