import type { Logger } from 'pino';
import type { CompiledQuery } from 'kysely';
import { perStore } from '../../store/cached.js';
import type { Db } from '../../store/db.js';
import { withCommit } from '../../store/with-commit.js';
import type { AuditLogTable } from '../../store/schema-audit.js';
import { auditRow, type AuditedCall } from './entry.js';

type Row = Omit<AuditLogTable, 'id'>;
const COLUMNS: (keyof Row)[] = [
  'uuid',
  'at',
  'team_id',
  'user_id',
  'token_id',
  'oauth_client_id',
  'source_ip',
  'door',
  'operation',
  'targets',
  'arguments',
  'result',
  'status',
  'duration_ms',
  'started_uuid',
];

/**
 * The insert compiled once per store by its own dialect (bench/audit: Kysely's builder and
 * compiler were a third of the entry's cost); each call only binds the values, in COLUMNS order.
 */
const compiledInsert = perStore((db): CompiledQuery => {
  const sample = Object.fromEntries(COLUMNS.map((c) => [c, null])) as unknown as Row;
  return db.insertInto('audit_log').values(sample).compile();
});

/** The insert for one call, compiled by db's dialect, ready to run on db or on one of its transactions. */
function insertFor(db: Db, call: AuditedCall): CompiledQuery {
  const row = auditRow(call);
  return { ...compiledInsert(db), parameters: COLUMNS.map((c) => row[c]) };
}

/**
 * Appends one call's entry on its own. Committed before the door answers, so an answered change
 * has its entry even if the process dies right after (SQLite WAL and PostgreSQL both commit
 * durably against a process crash). A failed write does not turn an applied change into an
 * error (the caller would retry a change that happened): the entry goes to the operational log
 * instead, at error level, already redacted. For callers outside a transaction (every door's
 * failures, operations that are not store-only, the CLI, jobs).
 */
export async function appendAudit(db: Db, logger: Logger, call: AuditedCall): Promise<void> {
  const query = insertFor(db, call);
  try {
    await db.executeQuery(query);
  } catch (err) {
    logger.error({ err: (err as Error).message, audit: rowOf(query) }, 'audit: could not store an entry');
  }
}

/**
 * Appends a store-only call's entry inside the call's own transaction trx (of db): it commits
 * with the change or not at all. On PostgreSQL the insert is sent with the COMMIT, in one round
 * trip (withCommit); a failed insert fails the commit, so the change rolls back with it.
 */
export async function appendAuditIn(db: Db, trx: Db, call: AuditedCall): Promise<void> {
  await withCommit(trx, insertFor(db, call));
}

const rowOf = (q: CompiledQuery): Record<string, unknown> => Object.fromEntries(COLUMNS.map((c, i) => [c, q.parameters[i]]));
