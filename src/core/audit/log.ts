import type { Logger } from 'pino';
import type { Db } from '../../store/db.js';
import { auditRow, type AuditedCall } from './entry.js';

/**
 * Appends one call's entry. Committed before the door answers, so an answered change has its
 * entry even if the process dies right after (SQLite WAL and PostgreSQL both commit durably
 * against a process crash). A failed write does not turn an applied change into an error (the
 * caller would retry a change that happened): the entry goes to the operational log instead,
 * at error level, already redacted.
 */
export async function appendAudit(db: Db, logger: Logger, call: AuditedCall): Promise<void> {
  const row = auditRow(call);
  try {
    await db.insertInto('audit_log').values(row).execute();
  } catch (err) {
    logger.error({ err: (err as Error).message, audit: row }, 'audit: could not store an entry');
  }
}
