import type { Compilable, CompiledQuery } from 'kysely';
import { authVersionFor, uncountedTables } from './auth-version.js';
import { directStoreOf, sameVersion, type Db, type StoreVersion } from './db.js';

/** A named placeholder in a query compiled once. */
class Param<K extends string> {
  constructor(readonly name: K) {}
}

export const param = <K extends string>(name: K): never => new Param(name) as never;

export interface PreparedOptions {
  /**
   * Reuse the rows read for the same parameters while the store has not changed since (checked
   * on every call, see StoreVersion). Returned rows are then shared and frozen. On PostgreSQL
   * "unchanged" is the auth counter (src/store/auth-version.ts), so only queries that read the
   * tables it counts may ask for reuse (checked when the query is built).
   */
  reuse?: boolean;
}

/** Rows kept for reuse per query; beyond this many parameter sets, the oldest go first. */
const REUSE_MAX = 1_000;

/**
 * A query built and compiled once, then run with new parameter values: the request path pays
 * for SQL execution only, not for Kysely's builder and compiler (two thirds of a lookup's cost).
 * Compiled by the store's own dialect, so it stays portable.
 */
export function prepared<Row, K extends string>(db: Db, build: (db: Db) => Compilable<Row>, options: PreparedOptions = {}) {
  const compiled: CompiledQuery<Row> = build(db).compile();
  const slots = compiled.parameters.map((p) => (p instanceof Param ? (p.name as K) : null));
  const direct = directStoreOf(db);
  const kept = options.reuse && direct ? new Map<string, { version: StoreVersion; rows: readonly Row[] }>() : undefined;
  const counter = options.reuse && !direct ? authVersionFor(db) : undefined;
  if (counter) {
    const others = uncountedTables(compiled.sql);
    if (others.length) throw new Error(`prepared: reuse on PostgreSQL needs counted tables only; this query also reads ${others.join(', ')}`);
  }
  const counted = counter && new Map<string, { version: number; rows: readonly Row[] }>();

  // PostgreSQL: the same reuse, judged by the auth counter read after the call began.
  const readCounted = async (parameters: unknown[]): Promise<readonly Row[]> => {
    const version = await counter!.current();
    const key = JSON.stringify(parameters);
    const hit = counted!.get(key);
    if (hit && hit.version === version) return hit.rows;
    // Read after the counter: a commit in between makes the entry look older than it is.
    const { rows } = await db.executeQuery<Row>({ ...compiled, parameters });
    for (const row of rows) Object.freeze(row);
    counted!.delete(key);
    if (counted!.size >= REUSE_MAX) counted!.delete(counted!.keys().next().value!);
    counted!.set(key, { version, rows: Object.freeze(rows) });
    return rows;
  };

  const readDirect = (parameters: unknown[]): readonly Row[] | undefined => {
    const version = kept && direct!.version();
    if (!version) return direct?.all(compiled.sql, parameters) as Row[] | undefined;
    const key = JSON.stringify(parameters);
    const hit = kept!.get(key);
    if (hit && sameVersion(hit.version, version)) return hit.rows;
    // The version is taken before the read: a commit in between makes the entry look older than
    // it is (read again next time), never newer.
    const rows = direct!.all(compiled.sql, parameters) as Row[] | undefined;
    if (!rows) return undefined;
    for (const row of rows) Object.freeze(row);
    kept!.delete(key);
    if (kept!.size >= REUSE_MAX) kept!.delete(kept!.keys().next().value!);
    kept!.set(key, { version, rows: Object.freeze(rows) });
    return rows;
  };

  return async (values: Record<K, unknown>): Promise<readonly Row[]> => {
    const parameters = compiled.parameters.map((p, i) => (slots[i] === null ? p : values[slots[i]!]));
    if (counted) return readCounted(parameters);
    const rows = readDirect(parameters);
    if (rows) return rows;
    const r = await db.executeQuery<Row>({ ...compiled, parameters });
    return r.rows;
  };
}
