import type { Pool } from 'pg';
import { AUTH_TABLES } from './migrations/020-auth-version.js';

/**
 * PostgreSQL's answer to SQLite's `PRAGMA data_version`, for the auth rows only: the counter that
 * migration 020's triggers move forward at every commit that changes a token, a membership, a
 * setting or a team (by any instance, the CLI or psql). Rows read at counter value V are still
 * right while the counter reads V, so they can be reused without letting a committed revocation,
 * role change or settings change outlive its commit on any instance.
 *
 * Strictness: a caller is answered only by a counter read *sent after it asked* (a read already
 * in flight may have been taken before a commit the caller has seen acknowledged). Callers that
 * ask while a read is in flight share the next one, so under load one round trip serves many
 * requests; on an idle instance each request makes one.
 */
export class AuthVersion {
  private sent: Promise<number> | null = null;
  private queued: Promise<number> | null = null;

  constructor(private readonly read: () => Promise<number>) {}

  current(): Promise<number> {
    if (!this.sent) return this.send();
    // The read in flight may predate what this caller must see: wait for it, then share the next.
    return (this.queued ??= this.sent.then(settled, settled).then(() => {
      this.queued = null;
      return this.sent ?? this.send();
    }));
  }

  private send(): Promise<number> {
    const p: Promise<number> = this.read().finally(() => {
      if (this.sent === p) this.sent = null;
    });
    return (this.sent = p);
  }
}

const settled = (): void => {};

/** The counter read: a named (server-side prepared) statement, straight on the pool. */
export function authVersionOf(pool: Pool): AuthVersion {
  const query = { name: 'berth_auth_version', text: 'select v from auth_version where id = 1', rowMode: 'array' as const };
  return new AuthVersion(async () => {
    const r = await pool.query<[number]>(query);
    return Number(r.rows[0]![0]);
  });
}

/** Per store handle (a Kysely instance; a transaction is another instance, and has none). */
const registry = new WeakMap<object, AuthVersion>();
export const registerAuthVersion = (db: object, v: AuthVersion): void => void registry.set(db, v);
export const authVersionFor = (db: object): AuthVersion | undefined => registry.get(db);

/**
 * The tables a query reads, from its compiled SQL (Kysely quotes every identifier): reuse on
 * PostgreSQL is sound only for queries that read nothing but the counted tables.
 */
export function uncountedTables(sql: string): string[] {
  const tables = [...sql.matchAll(/\b(?:from|join)\s+"([^"]+)"/gi)].map((m) => m[1]!);
  return tables.filter((t) => !(t in AUTH_TABLES));
}
