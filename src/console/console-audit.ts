import type { FastifyRequest } from 'fastify';
import { auditedStoreChange, type ChangeFacts, type StoreChange } from '../core/audit/change.js';
import type { Db } from '../store/db.js';
import { readSettings } from '../store/settings.js';

export { rootTeam } from '../core/audit/change.js';

/**
 * The `console` door of the audit log: a change a person makes in the console directly on the
 * store (memberships, tokens, connected apps, passkeys, sign-in links) leaves one entry in the
 * change's transaction, naming the signed-in person and the request's address. Approvals are
 * decided through the core (approve_approval, deny_approval), which audits them itself.
 */
export interface ConsoleChange<T> extends StoreChange<T> {
  /**
   * The team a failure's entry belongs to, when the change named one: used only if the person is
   * a member of it (a probe of another team goes to the instance's own log, not to that team's).
   */
  team?: number;
}

export interface ConsoleAuditDeps {
  db: Db;
  /** Where a failure entry that could not be stored is told (pino's, or the request's). */
  logger: { error: (obj: object, msg: string) => void };
}

/** Runs one console change and its entry in one transaction; a failure is recorded after the rollback, then rethrown. */
export function consoleChange<T>(deps: ConsoleAuditDeps, req: FastifyRequest, userId: number | null, fn: (trx: Db) => Promise<T>, change: ConsoleChange<T>): Promise<T> {
  return auditedStoreChange(
    deps.db,
    fn,
    change,
    { door: 'console', userId, sourceIp: req.ip },
    {
      failureFacts: async (db): Promise<ChangeFacts | null> => {
        const member =
          change.team !== undefined && userId !== null
            ? await db.selectFrom('team_members').select('team_id').where('team_id', '=', change.team).where('user_id', '=', userId).executeTakeFirst()
            : undefined;
        const teamId = member?.team_id ?? (await readSettings(db)).rootTeamId;
        return teamId === null ? null : { teamId };
      },
      lost: (message) => deps.logger.error({ err: message, operation: change.operation }, 'audit: could not store a console failure entry'),
    },
  );
}
