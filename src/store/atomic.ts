import { PostgresAdapter } from 'kysely';
import type { Db } from './db.js';

/** PostgreSQL's "try again" codes: serialization failure and deadlock. The transaction wrote nothing. */
const RETRYABLE = new Set(['40001', '40P01']);

export const isRetryable = (err: unknown): boolean => RETRYABLE.has(String((err as { code?: unknown } | null)?.code));

export interface AtomicOptions {
  /** Attempts before a serialization failure is given up (and answered as a conflict). */
  attempts?: number;
}

/**
 * Runs fn in one transaction that reads and writes as if alone, on both stores: every
 * read-then-write of berth goes through here, with its reads inside fn (through trx only).
 *
 * - SQLite: `BEGIN IMMEDIATE` on berth's one connection; writers are serialized, so what fn read
 *   still holds when it writes.
 * - PostgreSQL: SERIALIZABLE, retried on a serialization failure or deadlock with a jittered
 *   backoff. A check-then-insert that lost its race fails as a serialization failure, and the
 *   retry then sees the winner's row (and answers 409 by its own check); a parent deleted
 *   meanwhile is seen missing (404).
 *
 * fn may run more than once, so it must do nothing but store work. Inside a transaction already,
 * fn joins it (the outer one retries).
 */
export async function atomically<T>(db: Db, fn: (trx: Db) => Promise<T>, options: AtomicOptions = {}): Promise<T> {
  if (db.isTransaction) return fn(db);
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return db.transaction().execute(fn);
  const attempts = options.attempts ?? 30;
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().setIsolationLevel('serializable').execute(fn);
    } catch (err) {
      if (!isRetryable(err) || attempt >= attempts) throw err;
      // Full jitter, growing to 50 ms: racers spread out instead of colliding again in step.
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));
    }
  }
}
