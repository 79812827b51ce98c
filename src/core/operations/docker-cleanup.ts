import { z } from 'zod';
import { nowIso } from '../../store/db.js';
import { validationError } from '../../errors.js';
import { cronPattern, FREQUENCY_HELP } from '../frequency.js';
import { newUuid } from '../../ids.js';
import { owned } from '../lookup.js';
import { cleanupSettingsOf, cleanupSettingsSchema } from '../model/cleanup.js';
import { defineOperation } from '../operation.js';
import { uuidParam } from '../validators.js';
import { READ, stamps, UPDATE } from './common.js';

const executionSchema = z.object({
  uuid: z.string(),
  status: z.enum(['running', 'success', 'failed']),
  message: z.string().nullable(),
  finished_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const dockerCleanupOperations = [
  defineOperation({
    name: 'get_server_docker_cleanup',
    title: 'Get Docker cleanup settings',
    description:
      "A server's Docker cleanup settings: schedule (docker_cleanup_frequency, UTC cron or hourly/daily/...), whether every unused image goes (force_docker_cleanup), and whether unused volumes and networks go too.",
    summary: "A server's Docker cleanup settings: schedule, and what a cleanup may remove.",
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => cleanupSettingsSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/docker-cleanup' },
    async run({ db, caller }, { uuid }) {
      return cleanupSettingsOf(await owned(db, 'servers', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_server_docker_cleanup',
    title: 'Set Docker cleanup settings',
    description: "Change a server's Docker cleanup schedule or what it removes. Volumes and networks that berth's records name are always kept.",
    summary: "Change a server's Docker cleanup schedule (cron or hourly, daily, …) and what it may remove.",
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        docker_cleanup_frequency: z.string().min(1).max(100).optional().describe(FREQUENCY_HELP),
        docker_cleanup_threshold: z.number().int().min(1).max(99).optional(),
        force_docker_cleanup: z.boolean().optional(),
        delete_unused_volumes: z.boolean().optional(),
        delete_unused_networks: z.boolean().optional(),
        disable_application_image_retention: z.boolean().optional(),
      }),
    output: () => cleanupSettingsSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/servers/{uuid}/docker-cleanup' },
    async run({ db, caller }, { uuid, ...patch }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      if (patch.docker_cleanup_frequency !== undefined && !cronPattern(patch.docker_cleanup_frequency)) {
        throw validationError({ docker_cleanup_frequency: [`Invalid Cron / Human expression for Docker Cleanup Frequency. ${FREQUENCY_HELP}`] });
      }
      const next = { ...cleanupSettingsOf(s), ...patch };
      await db
        .updateTable('servers')
        .set({ docker_cleanup: JSON.stringify(next), updated_at: nowIso() })
        .where('id', '=', s.id)
        .execute();
      return next;
    },
  }),
  defineOperation({
    name: 'run_server_docker_cleanup',
    title: 'Run a Docker cleanup',
    description:
      "Free space on a server's engine now: dangling images and build cache (every unused image with force_docker_cleanup), and unused volumes/networks when asked. A stopped resource's data is kept. Follow with list_server_docker_cleanup_executions.",
    summary: "Run a Docker cleanup on a server's engine now; follow it with list_server_docker_cleanup_executions.",
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, delete_unused_volumes: z.boolean().optional(), delete_unused_networks: z.boolean().optional() }),
    output: () => z.object({ message: z.string(), execution_uuid: z.string() }),
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    destroysData: true,
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/docker-cleanup/run' },
    async run({ db, caller, jobs }, { uuid, ...opts }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const settings = cleanupSettingsOf(s);
      const execUuid = newUuid();
      const { id } = await db
        .insertInto('docker_cleanup_executions')
        .values({ uuid: execUuid, server_id: s.id, status: 'running', message: null, cleanup_log: null, scheduled_for: null, finished_at: null, ...stamps() })
        .returning('id')
        .executeTakeFirstOrThrow();
      // Pruning can take minutes on a busy engine: the answer does not wait for it.
      jobs.runDockerCleanup(id, { volumes: opts.delete_unused_volumes ?? settings.delete_unused_volumes, networks: opts.delete_unused_networks ?? settings.delete_unused_networks });
      return { message: 'Manual cleanup job started. Depending on the amount of data, this might take a while.', execution_uuid: execUuid };
    },
  }),
  defineOperation({
    name: 'list_server_docker_cleanup_executions',
    title: 'List Docker cleanups',
    description: 'The 20 most recent Docker cleanups of a server, newest first: status (running, success, failed) and message.',
    summary: 'The 20 most recent Docker cleanups of a server, newest first, with their outcome.',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.array(executionSchema),
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
