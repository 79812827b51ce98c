import type { Logger } from 'pino';
import { z } from 'zod';
import { notify } from '../../workers/notify/notifier.js';
import { nowIso, type Db } from '../../store/db.js';
import { validationError } from '../errors.js';
import { cronPattern, FREQUENCY_HELP } from '../frequency.js';
import { newUuid } from '../ids.js';
import { owned } from '../lookup.js';
import { defineOperation } from '../operation.js';
import type { Runtime } from '../runtime.js';
import { uuidParam } from '../validators.js';
import { READ, stamps, UPDATE } from './common.js';

/** Coolify's docker cleanup settings of a server, with its defaults. */
export const cleanupSettingsSchema = z.object({
  docker_cleanup_frequency: z.string(),
  docker_cleanup_threshold: z.number().int(),
  force_docker_cleanup: z.boolean(),
  delete_unused_volumes: z.boolean(),
  delete_unused_networks: z.boolean(),
  disable_application_image_retention: z.boolean(),
});
export type CleanupSettings = z.infer<typeof cleanupSettingsSchema>;

export const CLEANUP_DEFAULTS: CleanupSettings = {
  docker_cleanup_frequency: '0 0 * * *',
  docker_cleanup_threshold: 80,
  force_docker_cleanup: false,
  delete_unused_volumes: false,
  delete_unused_networks: false,
  disable_application_image_retention: false,
};

export const cleanupSettingsOf = (s: { docker_cleanup: string | null }): CleanupSettings => ({ ...CLEANUP_DEFAULTS, ...(s.docker_cleanup ? (JSON.parse(s.docker_cleanup) as Partial<CleanupSettings>) : {}) });

const executionSchema = z.object({
  uuid: z.string(),
  status: z.enum(['running', 'success', 'failed']),
  message: z.string().nullable(),
  finished_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

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
    .select(['x.uuid', 'x.server_id', 's.team_id', 's.name', 's.docker_cleanup'])
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
  await db.updateTable('docker_cleanup_executions').set({ status, message, cleanup_log: log.join('\n'), finished_at: now, updated_at: now }).where('id', '=', executionId).execute();
  logger.info({ server: e.name, execution: e.uuid, status }, 'docker cleanup ended');
  await notify(db, logger, e.team_id, `docker-cleanup:${e.uuid}`, {
    event: status === 'success' ? 'docker_cleanup_success' : 'docker_cleanup_failure',
    title: `Docker cleanup on ${e.name} ${status === 'success' ? 'finished' : 'failed'}`,
    text: [message, ...log].join('\n'),
    data: { server: e.name, execution_uuid: e.uuid, status },
  });
}

export const dockerCleanupOperations = [
  defineOperation({
    name: 'get_server_docker_cleanup',
    summary: "A server's Docker cleanup settings: schedule, and what a cleanup may remove.",
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam }),
    output: cleanupSettingsSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/docker-cleanup' },
    async run({ db, caller }, { uuid }) {
      return cleanupSettingsOf(await owned(db, 'servers', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_server_docker_cleanup',
    summary: "Change a server's Docker cleanup schedule (cron or hourly, daily, …) and what it may remove.",
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({
      uuid: uuidParam,
      docker_cleanup_frequency: z.string().min(1).max(100).optional().describe(FREQUENCY_HELP),
      docker_cleanup_threshold: z.number().int().min(1).max(99).optional(),
      force_docker_cleanup: z.boolean().optional(),
      delete_unused_volumes: z.boolean().optional(),
      delete_unused_networks: z.boolean().optional(),
      disable_application_image_retention: z.boolean().optional(),
    }),
    output: cleanupSettingsSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/servers/{uuid}/docker-cleanup' },
    async run({ db, caller }, { uuid, ...patch }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      if (patch.docker_cleanup_frequency !== undefined && !cronPattern(patch.docker_cleanup_frequency)) {
        throw validationError({ docker_cleanup_frequency: [`Invalid Cron / Human expression for Docker Cleanup Frequency. ${FREQUENCY_HELP}`] });
      }
      const next = { ...cleanupSettingsOf(s), ...patch };
      await db.updateTable('servers').set({ docker_cleanup: JSON.stringify(next), updated_at: nowIso() }).where('id', '=', s.id).execute();
      return next;
    },
  }),
  defineOperation({
    name: 'run_server_docker_cleanup',
    summary: "Run a Docker cleanup on a server's engine now; follow it with list_server_docker_cleanup_executions.",
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam, delete_unused_volumes: z.boolean().optional(), delete_unused_networks: z.boolean().optional() }),
    output: z.object({ message: z.string(), execution_uuid: z.string() }),
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/docker-cleanup/run' },
    async run({ db, caller, runtime, logger }, { uuid, ...opts }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const settings = cleanupSettingsOf(s);
      const execUuid = newUuid();
      const { id } = await db
        .insertInto('docker_cleanup_executions')
        .values({ uuid: execUuid, server_id: s.id, status: 'running', message: null, cleanup_log: null, scheduled_for: null, finished_at: null, ...stamps() })
        .returning('id')
        .executeTakeFirstOrThrow();
      // Pruning can take minutes on a busy engine: the answer does not wait for it.
      void runCleanup({ db, runtime, logger }, id, { volumes: opts.delete_unused_volumes ?? settings.delete_unused_volumes, networks: opts.delete_unused_networks ?? settings.delete_unused_networks });
      return { message: 'Manual cleanup job started. Depending on the amount of data, this might take a while.', execution_uuid: execUuid };
    },
  }),
  defineOperation({
    name: 'list_server_docker_cleanup_executions',
    summary: "The 20 most recent Docker cleanups of a server, newest first, with their outcome.",
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam }),
    output: z.array(executionSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/docker-cleanup/executions' },
    async run({ db, caller }, { uuid }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      return db
        .selectFrom('docker_cleanup_executions')
        .select(['uuid', 'status', 'message', 'finished_at', 'created_at', 'updated_at'])
        .where('server_id', '=', s.id)
        .orderBy('id', 'desc')
        .limit(20)
        .execute();
    },
  }),
];
