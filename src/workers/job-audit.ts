import type { Logger } from 'pino';
import { entryRow } from '../core/audit/entry.js';
import { atomically } from '../store/atomic.js';
import type { Db } from '../store/db.js';

/**
 * The `job` door of the audit log: a scheduled run that changed something with nobody at the
 * keyboard (a scheduled task's command, a database backup, a Docker cleanup) leaves one entry
 * when it ends. It is written in the same transaction as the run's one conditional move out of
 * `running`, so of several instances (or a run and the tick that finds it orphaned) exactly one
 * writes it. It is attributed to whoever set the schedule as it stands, read from the log itself
 * (docs/decisions/audit-and-approvals.md, "Audit log: the job door").
 */
export interface JobRun {
  teamId: number;
  /** The core's name where one runs the same thing on demand (run_server_docker_cleanup), else one in its style. */
  operation: string;
  /** The schedule's owner and the schedule (uuids), as a call's targets name them. */
  targets: string[];
  /** The run's own record (the execution): `started_uuid`, as a call names the deployment it started. */
  recordUuid: string;
  /** The uuid whose create/update entries set this schedule, and those operations' names. */
  schedule: { uuid: string; setBy: readonly string[] };
  scheduledFor: string | null;
  /** When the run started (ISO): the entry's duration runs from there. */
  startedAt: string;
  ok: boolean;
}

/**
 * Who set the schedule as it stands: the newest successful change from a person's door to that
 * schedule. Unknown (null) once retention removed it, or for a schedule made before the log.
 */
async function setter(trx: Db, run: JobRun): Promise<{ user_id: number | null; token_id: number | null; oauth_client_id: string | null } | undefined> {
  if (!run.schedule.setBy.length) return undefined;
  return (
    trx
      .selectFrom('audit_log')
      .select(['user_id', 'token_id', 'oauth_client_id'])
      .where('team_id', '=', run.teamId)
      .where('door', '!=', 'job')
      .where('result', '=', 'ok')
      .where('operation', 'in', [...run.schedule.setBy])
      // Targets are a JSON array of uuids ([a-z0-9]): the quoted uuid matches one element exactly.
      .where('targets', 'like', `%"${run.schedule.uuid}"%`)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst()
  );
}

/** Appends a finished run's entry inside trx, the transaction that moved the run out of `running`. */
export async function appendJobEntry(trx: Db, run: JobRun): Promise<void> {
  const who = await setter(trx, run);
  await trx
    .insertInto('audit_log')
    .values(
      entryRow({
        team_id: run.teamId,
        user_id: who?.user_id ?? null,
        token_id: who?.token_id ?? null,
        oauth_client_id: who?.oauth_client_id ?? null,
        door: 'job',
        operation: run.operation,
        targets: JSON.stringify(run.targets),
        arguments: JSON.stringify({ scheduled_for: run.scheduledFor }),
        result: run.ok ? 'ok' : 'failed',
        status: run.ok ? 200 : 500,
        duration_ms: Math.max(0, Date.now() - Date.parse(run.startedAt)),
        started_uuid: run.recordUuid,
      }),
    )
    .execute();
}

/**
 * Ends a run: fn makes its move out of `running` and hands its entry to `audit`, in one
 * transaction. The run already happened on the engine, so an entry that cannot be stored must
 * not leave it `running` for ever: the move is then made again without it, and the entry goes
 * to the operational log at error level (as a call's entry does after its change committed).
 */
export async function endRun(db: Db, logger: Pick<Logger, 'error'>, fn: (trx: Db, audit: (run: JobRun) => Promise<void>) => Promise<void>): Promise<void> {
  let lost: JobRun | undefined;
  try {
    await atomically(db, (trx) => fn(trx, (run) => appendJobEntry(trx, run)));
  } catch (err) {
    await atomically(db, (trx) =>
      fn(trx, async (run) => {
        lost = run;
      }),
    );
    // Only the entry failed (the move alone went through): say so, with what it would have said.
    logger.error({ err: (err as Error).message, audit: lost }, 'audit: could not store a job entry');
  }
}
