import { outcomeOf, scrubbedArguments } from '../core/audit/entry.js';
import { userByEmail } from '../auth/login-links.js';
import { teamByRef } from '../core/admin.js';
import { atomically } from '../store/atomic.js';
import type { Db } from '../store/db.js';
import type { AuditLogTable } from '../store/schema-audit.js';
import { readSettings } from '../store/settings.js';
import { BerthError } from '../errors.js';
import { newUuid } from '../ids.js';

/**
 * The `cli` door of the audit log: a change the admin CLI makes on the store directly (it runs no
 * core operation) leaves one entry, written in the change's own transaction, so a change is
 * never stored without its entry; a refused or failed change gets its entry afterwards.
 * The operator at the shell is nobody berth knows: no token, no address; the user is the person
 * the change is made for (docs/decisions.md, "Audit log: the cli and job doors").
 */

/** What an entry says beyond the command's own arguments: whose team's log it goes to, for whom, about what. */
export interface ChangeFacts {
  teamId: number;
  userId?: number | null;
  /** Typed references (`team:3`, `user:2`, `token:7`): users, teams and tokens have no uuids. */
  targets?: string[];
}

export interface CliChange<T> {
  /** A core operation's name where one does the same (update_settings), else a name in its style. */
  operation: string;
  /** What the operator asked, redacted by name on the way in; never an output (a minted token). */
  args: Record<string, unknown>;
  /** The status of a success (201 for what it creates), as REST would answer. */
  status?: number;
  /** Read in the change's transaction, after it. */
  facts: (out: T, trx: Db) => ChangeFacts | Promise<ChangeFacts>;
}

type Row = Omit<AuditLogTable, 'id'>;

function row(change: CliChange<unknown>, facts: ChangeFacts, startedAt: number, error?: unknown): Row {
  const { result, status } = outcomeOf(error, change.status ?? 200);
  return {
    uuid: newUuid(),
    at: new Date().toISOString(),
    team_id: facts.teamId,
    user_id: facts.userId ?? null,
    token_id: null,
    oauth_client_id: null,
    source_ip: null,
    door: 'cli',
    operation: change.operation,
    targets: JSON.stringify(facts.targets ?? []),
    arguments: JSON.stringify(scrubbedArguments(change.args)),
    result,
    status,
    duration_ms: Math.max(0, Math.round(performance.now() - startedAt)),
    started_uuid: null,
  };
}

const insert = (db: Db, r: Row) => db.insertInto('audit_log').values(r).execute();

/** The instance's own log, for what concerns no one team (users, settings, sign-in links). */
export async function rootTeam(db: Db): Promise<number> {
  const { rootTeamId } = await readSettings(db);
  if (rootTeamId === null) throw new BerthError('conflict', { message: 'This instance has no root team; run `berth init`.' });
  return rootTeamId;
}

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
export async function auditedChange<T>(db: Db, fn: (trx: Db) => Promise<T>, change: CliChange<T>): Promise<T> {
  const startedAt = performance.now();
  try {
    return await atomically(db, async (trx) => {
      const out = await fn(trx);
      await insert(trx, row(change as CliChange<unknown>, await change.facts(out, trx), startedAt));
      return out;
    });
  } catch (error) {
    try {
      const facts = await factsOfFailure(db, change.args);
      if (facts) await insert(db, row(change as CliChange<unknown>, facts, startedAt, error));
    } catch (e) {
      // The change's own failure is what the operator must see; the lost entry is said beside it.
      console.error(`berth: could not record the failure in the audit log: ${(e as Error).message}`);
    }
    throw error;
  }
}
