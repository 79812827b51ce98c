import type { CompiledQuery, DatabaseConnection, Kysely } from 'kysely';
import type { Database } from './schema.js';

/** The store's handle, named from the schema rather than from db.ts, which imports this module. */
type Db = Kysely<Database>;

/**
 * Statements a transaction sends together with its COMMIT, in one round trip (bench/audit: on
 * PostgreSQL the audit entry's own INSERT round trip was most of its cost). The PostgreSQL driver
 * (src/store/db.ts) marks its connections as carriers and, at commit, sends the pending statements
 * and `commit` as one simple-protocol query; a statement that fails there fails the commit, so
 * the transaction rolls back as if it had failed inline. Anywhere else (SQLite, in-process, no
 * round trip to save; no transaction) the statement runs at once.
 */

const carriers = new WeakSet<DatabaseConnection>();
const pending = new WeakMap<DatabaseConnection, CompiledQuery[]>();

/** For the driver: connections whose commits send what withCommit left for them. */
export const carryCommits = (connection: DatabaseConnection): void => {
  carriers.add(connection);
};

/**
 * Runs query in trx's transaction, at its commit where the store can carry it. Only for writes
 * whose result nobody reads (it answers nothing), with parameters that are strings, finite
 * numbers, booleans or null, and SQL whose only `$n` are its placeholders (a compiled insert).
 */
export async function withCommit(trx: Db, query: CompiledQuery): Promise<void> {
  const connection = trx.isTransaction ? await trx.getExecutor().provideConnection(async (c) => c) : undefined;
  if (!connection || !carriers.has(connection)) {
    await trx.executeQuery(query);
    return;
  }
  const list = pending.get(connection);
  if (list) list.push(query);
  else pending.set(connection, [query]);
}

/** For the driver: what connection's commit must carry (and no longer holds), if anything. */
export function takePending(connection: DatabaseConnection): CompiledQuery[] | undefined {
  const list = pending.get(connection);
  if (list) pending.delete(connection);
  return list;
}

/**
 * The statements and `commit` as one query text without parameters (PostgreSQL's simple protocol
 * runs several statements per message), values inlined as literals by the driver's own
 * escapeLiteral (pg's), never by hand.
 */
export function commitText(queries: readonly CompiledQuery[], escapeLiteral: (s: string) => string): string {
  const literal = (v: unknown): string => {
    // undefined is no SQL value: a caller that passed one meant something else than null.
    if (v === null) return 'null';
    // PostgreSQL refuses NUL in text anyway; refused here, the error names the cause.
    if (typeof v === 'string' && !v.includes('\0')) return escapeLiteral(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    // In parentheses: a negative number after an operator would otherwise start a `--` comment.
    if (typeof v === 'number' && Number.isFinite(v)) return v < 0 ? `(${String(v)})` : String(v);
    throw new Error(`withCommit: cannot inline ${typeof v === 'string' ? 'a string with a NUL character' : `a value of type ${typeof v}`}`);
  };
  const statements = queries.map((q) =>
    q.sql.replace(/\$(\d+)/g, (_, n: string) => {
      const i = Number(n) - 1;
      if (i < 0 || i >= q.parameters.length) throw new Error(`withCommit: no parameter $${n}`);
      return literal(q.parameters[i]);
    }),
  );
  return `${statements.join(';\n')};\ncommit`;
}
