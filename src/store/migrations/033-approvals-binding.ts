import type { Kysely } from 'kysely';
import { approvalArgsHash } from '../approval-args-hash.js';

/**
 * Only a person approves (issue 39): an approval binds the held call's arguments by a hash of
 * their canonical JSON (approval-args-hash.ts), shown to the approver, posted back with the
 * decision and checked again before the call runs. The calls held before this migration get theirs
 * from their stored input. Nullable only because SQLite adds no NOT NULL column without a default;
 * berth writes it on every held call, and a row without one is never run.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('approvals').addColumn('args_hash', 'text').execute();
  const d = db as unknown as Kysely<{ approvals: { id: number; input: string; args_hash: string | null } }>;
  const rows = await d.selectFrom('approvals').select(['id', 'input']).execute();
  for (const r of rows)
    await d
      .updateTable('approvals')
      .set({ args_hash: approvalArgsHash(r.input) })
      .where('id', '=', r.id)
      .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('approvals').dropColumn('args_hash').execute();
}
