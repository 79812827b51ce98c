import type { Logger } from 'pino';
import { cleanupSettingsOf } from '../core/model/cleanup.js';
import type { Runtime } from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import { endRun } from './job-audit.js';
import { notify } from './notify/notifier.js';

/**
 * Runs one recorded cleanup execution to its end: the log and outcome go on the row, and the
 * team's channels hear of it (docker_cleanup_success / _failure). Never throws.
 */
export async function runCleanup(deps: { db: Db; runtime: Runtime; logger: Logger }, executionId: number, opts: { volumes: boolean; networks: boolean }): Promise<void> {
  try {
    await cleanup(deps, executionId, opts);
  } catch (err) {
    deps.logger.error({ err: (err as Error).message, executionId }, 'docker cleanup could not be recorded');
  }
}

async function cleanup(deps: { db: Db; runtime: Runtime; logger: Logger }, executionId: number, opts: { volumes: boolean; networks: boolean }): Promise<void> {
  const { db, runtime, logger } = deps;
  const e = await db
    .selectFrom('docker_cleanup_executions as x')
    .innerJoin('servers as s', 's.id', 'x.server_id')
    .select(['x.uuid', 'x.server_id', 'x.scheduled_for', 'x.created_at', 's.uuid as server_uuid', 's.team_id', 's.name', 's.docker_cleanup'])
    .where('x.id', '=', executionId)
    .executeTakeFirstOrThrow();
  let status: 'success' | 'failed' = 'success';
  let message: string;
  let log: string[] = [];
  try {
    log = await runtime.dockerCleanup(e.server_id, { allImages: cleanupSettingsOf(e).force_docker_cleanup, ...opts });
    message = 'Docker cleanup finished.';
  } catch (err) {
    status = 'failed';
    message = `Docker cleanup failed: ${(err as Error).message}`;
  }
  const now = nowIso();
  // The run's one move out of `running`; a scheduled run's `job` entry in the same transaction
  // (a cleanup run on demand is its call's entry).
  await endRun(db, logger, async (trx, audit) => {
    const r = await trx
      .updateTable('docker_cleanup_executions')
      .set({ status, message, cleanup_log: log.join('\n'), finished_at: now, updated_at: now })
      .where('id', '=', executionId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n || e.scheduled_for === null) return;
    await audit({
      teamId: e.team_id,
      operation: 'run_server_docker_cleanup',
      targets: [e.server_uuid],
      recordUuid: e.uuid,
      schedule: { uuid: e.server_uuid, setBy: ['update_server_docker_cleanup', 'create_server'] },
      scheduledFor: e.scheduled_for,
      startedAt: e.created_at,
      ok: status === 'success',
    });
  });
  logger.info({ server: e.name, execution: e.uuid, status }, 'docker cleanup ended');
  await notify(db, logger, e.team_id, `docker-cleanup:${e.uuid}`, {
    event: status === 'success' ? 'docker_cleanup_success' : 'docker_cleanup_failure',
    title: `Docker cleanup on ${e.name} ${status === 'success' ? 'finished' : 'failed'}`,
    text: [message, ...log].join('\n'),
    data: { server: e.name, execution_uuid: e.uuid, status },
  });
}
