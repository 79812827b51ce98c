import { userByEmail } from '../../auth/login-links.js';
import { teamByRef } from '../admin.js';
import { auditedStoreChange, type ChangeFacts, type StoreChange } from './change.js';
import type { Db } from '../../store/db.js';
import { readSettings } from '../../store/settings.js';

export { rootTeam, type ChangeFacts } from './change.js';

/**
 * The `cli` door of the audit log: a change the admin CLI makes on the store directly (it runs no
 * core operation) leaves one entry, written in the change's own transaction (src/core/audit/change.ts).
 * The operator at the shell is nobody berth knows: no token, no address; the user is the person
 * the change is made for (docs/decisions/audit-and-approvals.md, "Audit log: the cli and job doors").
 */
export type CliChange<T> = StoreChange<T>;

/**
 * Where a failed change's entry goes: the team the command named when it exists, else the root
 * team (the instance's own log); the person it named when known. No instance yet: nowhere.
 */
async function factsOfFailure(db: Db, args: Record<string, unknown>): Promise<ChangeFacts | null> {
  const team = typeof args.team === 'string' ? await teamByRef(db, args.team).catch(() => undefined) : undefined;
  const teamId = team?.id ?? (await readSettings(db)).rootTeamId;
  if (teamId === null) return null;
  const address = [args.email, args.owner].find((x): x is string => typeof x === 'string');
  const user = address ? await userByEmail(db, address.trim()) : undefined;
  return { teamId, userId: user?.id ?? null };
}

/** Runs one CLI change and its entry in one transaction; a failure is recorded, then rethrown. */
export function auditedChange<T>(db: Db, fn: (trx: Db) => Promise<T>, change: CliChange<T>): Promise<T> {
  return auditedStoreChange(
    db,
    fn,
    change,
    { door: 'cli', userId: null, sourceIp: null },
    {
      failureFacts: (d) => factsOfFailure(d, change.args),
      // The change's own failure is what the operator must see; the lost entry is said beside it.
      lost: (message) => console.error(`berth: could not record the failure in the audit log: ${message}`),
    },
  );
}

/** A new token's entry: its team's log, its holder, and its id (never its value). */
export async function tokenFacts(t: { id: number }, trx: Db): Promise<ChangeFacts> {
  const row = await trx.selectFrom('api_tokens').select(['team_id', 'user_id']).where('id', '=', t.id).executeTakeFirstOrThrow();
  return { teamId: row.team_id, userId: row.user_id, targets: [`token:${t.id}`] };
}
