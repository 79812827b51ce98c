import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import type { AuditDoor, AuditLogTable } from '../../store/schema-audit.js';
import { readSettings } from '../../store/settings.js';
import { BerthError } from '../../errors.js';
import { entryRow, outcomeOf, scrubbedArguments } from './entry.js';

/**
 * An audited change that is no core operation: the admin CLI's and the console's own changes
 * to the store (memberships, tokens, passkeys, sign-in links). Its entry is written in the
 * change's own transaction, so a change is never stored without its entry; a refused or failed
 * change gets its entry after the rollback (docs/decisions/audit-and-approvals.md, "Audit log: the cli and job doors"
 * and "Audit log: the console's own changes").
 */

/** What an entry says beyond the change's own arguments: whose team's log it goes to, for whom, about what. */
export interface ChangeFacts {
  teamId: number;
  /** The person the change was made for; the entry's user when the actor is nobody berth knows (the CLI). */
  userId?: number | null;
  /** Typed references (`team:3`, `user:2`, `token:7`): users, teams and tokens have no uuids. */
  targets?: string[];
}

export interface StoreChange<T> {
  /** A core operation's name where one does the same (update_settings), else a name in its style. */
  operation: string;
  /** What was asked, redacted by name on the way in; never an output (a minted token). */
  args: Record<string, unknown>;
  /** The status of a success (201 for what it creates), as REST would answer. */
  status?: number;
  /** Read in the change's transaction, after it. */
  facts: (out: T, trx: Db) => ChangeFacts | Promise<ChangeFacts>;
  /**
   * A refusal that still commits what it used up (a passkey's one-time challenge): the entry is
   * written in the transaction with this error's outcome, and the output returned as it is.
   */
  refused?: (out: T) => BerthError | undefined;
}

/** Who made the change, through which door. */
export interface Actor {
  door: AuditDoor;
  /** The signed-in person (console); null for the operator at a shell, whom berth does not know. */
  userId: number | null;
  sourceIp: string | null;
}

type Row = Omit<AuditLogTable, 'id'>;

function row(change: StoreChange<unknown>, actor: Actor, facts: ChangeFacts, startedAt: number, error?: unknown): Row {
  // A person in the console or the operator holds no token: none is named.
  return entryRow({
    ...outcomeOf(error, change.status ?? 200),
    team_id: facts.teamId,
    user_id: actor.userId ?? facts.userId ?? null,
    source_ip: actor.sourceIp,
    door: actor.door,
    operation: change.operation,
    targets: JSON.stringify(facts.targets ?? []),
    arguments: JSON.stringify(scrubbedArguments(change.args)),
    duration_ms: Math.max(0, Math.round(performance.now() - startedAt)),
  });
}

const insert = (db: Db, r: Row) => db.insertInto('audit_log').values(r).execute();

/** The instance's own log, for what concerns no one team (users, settings, sign-in links, passkeys). */
export async function rootTeam(db: Db): Promise<number> {
  const { rootTeamId } = await readSettings(db);
  if (rootTeamId === null) throw new BerthError('conflict', { message: 'This instance has no root team; run `berth init`.' });
  return rootTeamId;
}

export interface ChangeOptions {
  /** Where a failed change's entry goes (read after the rollback); null: nowhere (no instance yet). */
  failureFacts: (db: Db, error: unknown) => Promise<ChangeFacts | null>;
  /** Told when the failure's own entry could not be stored: the change's error is what the caller sees. */
  lost: (message: string) => void;
}

/** Runs one change and its entry in one transaction; a failure is recorded after the rollback, then rethrown. */
export async function auditedStoreChange<T>(db: Db, fn: (trx: Db) => Promise<T>, change: StoreChange<T>, actor: Actor, opts: ChangeOptions): Promise<T> {
  const startedAt = performance.now();
  const c = change as StoreChange<unknown>;
  try {
    return await atomically(db, async (trx) => {
      const out = await fn(trx);
      await insert(trx, row(c, actor, await change.facts(out, trx), startedAt, change.refused?.(out)));
      return out;
    });
  } catch (error) {
    try {
      const facts = await opts.failureFacts(db, error);
      if (facts) await insert(db, row(c, actor, facts, startedAt, error));
    } catch (e) {
      opts.lost((e as Error).message);
    }
    throw error;
  }
}
