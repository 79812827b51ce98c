import { sql } from 'kysely';
import type { Db } from '../../src/store/db.js';
import { TEST_STORE } from './store.js';

/** Makes every audit insert into db fail while fn runs, as a full disk or a broken column would. */
export async function refusingAuditInserts(db: Db, fn: () => Promise<void>): Promise<void> {
  if (TEST_STORE === 'postgres') {
    await sql`CREATE OR REPLACE FUNCTION audit_refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$ LANGUAGE plpgsql`.execute(db);
    await sql`CREATE TRIGGER audit_refuse BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_refuse()`.execute(db);
  } else {
    await sql`CREATE TRIGGER audit_refuse BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit refused'); END`.execute(db);
  }
  try {
    await fn();
  } finally {
    await sql`DROP TRIGGER audit_refuse${sql.raw(TEST_STORE === 'postgres' ? ' ON audit_log' : '')}`.execute(db);
  }
}
