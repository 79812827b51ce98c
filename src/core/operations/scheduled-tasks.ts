import { z } from 'zod';
import type { Selectable } from 'kysely';
import { atomically } from '../../store/atomic.js';
import { nowIso, type Db } from '../../store/db.js';
import type { ScheduledTaskExecutionsTable, ScheduledTasksTable } from '../../store/schema.js';
import { notFound, validationError } from '../../errors.js';
import { cronPattern, FREQUENCY_HELP } from '../frequency.js';
import { newUuid } from '../../ids.js';
import { ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { uuidParam } from '../validators.js';
import { CREATE, DELETE, ENGINE, messageSchema, READ, stamps, UPDATE } from './common.js';
import { truncateLog } from './deployments.js';
import type { ServiceConfig } from '../model/service.js';
import { config, type ResourceRow, perCollection } from './resource-common.js';

type TaskRow = Selectable<ScheduledTasksTable>;
type ExecutionRow = Selectable<ScheduledTaskExecutionsTable>;

/** Coolify's ScheduledTask, as its API shows it. */
const taskSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  /** May carry credentials (a curl with a token): needs read:sensitive. */
  command: sensitive(z.string()),
  frequency: z.string(),
  container: z.string().nullable(),
  timeout: z.number().int(),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** Coolify's ScheduledTaskExecution, with the command's output and exit code shown as a deployment's log is. */
const executionSchema = z.object({
  uuid: z.string(),
  status: z.enum(['running', 'success', 'failed']),
  message: z.string().nullable(),
  logs: sensitive(z.string().nullable()),
  logs_truncated: z.boolean(),
  exit_code: z.number().int().nullable(),
  /** Seconds from start to finish; null while running. */
  duration: z.number().nullable(),
  retry_count: z.number().int(),
  scheduled_for: z.string().nullable(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const taskView = (t: TaskRow): z.infer<typeof taskSchema> => ({
  uuid: t.uuid,
  name: t.name,
  command: t.command,
  frequency: t.frequency,
  container: t.container,
  timeout: t.timeout,
  enabled: t.enabled === 1,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

function executionView(e: ExecutionRow, full: boolean): z.infer<typeof executionSchema> {
  const log = e.logs === null ? null : truncateLog(e.logs, full);
  return {
    uuid: e.uuid,
    status: e.status,
    message: e.message,
    logs: log?.text ?? null,
    logs_truncated: log?.truncated ?? false,
    exit_code: e.exit_code,
    duration: e.finished_at ? Math.max(0, Date.parse(e.finished_at) - Date.parse(e.started_at)) / 1000 : null,
    retry_count: 0,
    scheduled_for: e.scheduled_for,
    started_at: e.started_at,
    finished_at: e.finished_at,
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
}

const fields = {
  name: z.string().trim().min(1).max(255),
  command: z
    .string()
    .min(1)
    .max(65_536)
    .regex(/^[^\u0000]*$/, 'Must not contain NUL characters.'),
  frequency: z.string().min(1).max(255).describe(FREQUENCY_HELP),
  container: z
    .string()
    .max(255)
    .nullable()
    .optional()
    .describe("A service's container (compose service name); empty for a one-container service. An application's tasks run in its one container, whatever this says."),
  timeout: z.number().int().min(1).max(86_400).optional().describe('Seconds before the command is killed (default 300).'),
  enabled: z.boolean().optional(),
};

const taskParams = { uuid: uuidParam, task_uuid: uuidParam };

function checkFrequency(frequency: string | undefined): void {
  if (frequency !== undefined && !cronPattern(frequency)) throw validationError({ frequency: [`Invalid cron expression or frequency format. ${FREQUENCY_HELP}`] });
}

/** The container a task names, as stored: null for an application or a service's only container. */
function containerOf(r: ResourceRow, container: string | null | undefined): string | null {
  const name = container?.trim() || null;
  // Coolify keeps the name an application's task is given and runs it in the application's one
  // container whatever it says; so does berth.
  if (r.kind === 'application') return name;
  const names = config<ServiceConfig>(r).containers.map((c) => c.name);
  if (name === null) {
    if (names.length === 1) return null;
    throw validationError({ container: [`The service has several containers: name one of ${names.join(', ')}.`] });
  }
  if (!names.includes(name)) throw validationError({ container: [`The service has no container ${name}; its containers: ${names.join(', ')}.`] });
  return name;
}

/** A task of a team's resource, by uuid; another resource's or team's task is the same 404 as a missing one. */
export async function ownedTask(db: Db, teamId: number, kinds: Parameters<typeof ownedResource>[3], uuid: string, taskUuid: string) {
  const r = await ownedResource(db, uuid, teamId, kinds);
  const t = await db.selectFrom('scheduled_tasks').selectAll().where('resource_id', '=', r.id).where('uuid', '=', taskUuid).executeTakeFirst();
  if (!t) throw notFound();
  return { r, t };
}

/**
 * Coolify's scheduled tasks of applications or services: a shell command run inside the
 * resource's running container on a schedule (cron or Coolify's words), with a timeout; each run
 * kept with its output and exit code.
 */
export function scheduledTaskOperations(collection: 'applications' | 'services') {
  const { singular, kinds, toolset, one } = perCollection(collection);
  const where = collection === 'services' ? "one of the service's containers (container: its compose service name; may be left empty when it has one)" : "the application's container";
  const base = `/api/v1/${collection}/{uuid}/scheduled-tasks`;
  return [
    defineOperation({
      name: `list_${singular}_scheduled_tasks`,
      title: `List ${singular} scheduled tasks`,
      description: `List the scheduled tasks of ${one}: name, frequency, container, timeout, enabled; the command needs read:sensitive.`,
      summary: `List the scheduled tasks of ${one} (commands run in its container on a schedule).`,
      permission: 'read',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam }),
      output: () => z.array(taskSchema),
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, { uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        return (await db.selectFrom('scheduled_tasks').selectAll().where('resource_id', '=', r.id).orderBy('id').execute()).map(taskView);
      },
    }),
    defineOperation({
      name: `create_${singular}_scheduled_task`,
      title: `Schedule ${one} task`,
      description: `Schedule a shell command (sh -c) inside ${where}: name, command, frequency (cron, UTC, or every_minute/hourly/daily/...), timeout seconds (default 300; killed after), enabled. It runs only while the container runs.`,
      summary: `Schedule a shell command inside ${one}'s container (cron or hourly/daily/…, timeout in seconds).`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam, ...fields }),
      output: () => taskSchema,
      annotations: CREATE,
      http: { method: 'POST', path: base, status: 201 },
      async run({ db, caller }, { uuid, ...i }) {
        checkFrequency(i.frequency);
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const row = {
            uuid: newUuid(),
            team_id: caller.teamId,
            resource_id: r.id,
            name: i.name,
            command: i.command,
            frequency: i.frequency.trim(),
            container: containerOf(r, i.container),
            timeout: i.timeout ?? 300,
            enabled: i.enabled === false ? 0 : 1,
            last_due: null,
            ...stamps(),
          };
          const { id } = await trx.insertInto('scheduled_tasks').values(row).returning('id').executeTakeFirstOrThrow();
          return taskView({ ...row, id });
        });
      },
    }),
    defineOperation({
      name: `update_${singular}_scheduled_task`,
      title: `Change ${one} scheduled task`,
      description: `Change a scheduled task of ${one} (task_uuid): name, command, frequency, container, timeout, enabled.`,
      summary: `Change a scheduled task of ${one} (name, command, frequency, container, timeout, enabled).`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ ...taskParams, ...fields, name: fields.name.optional(), command: fields.command.optional(), frequency: fields.frequency.optional() }),
      output: () => taskSchema,
      annotations: UPDATE,
      http: { method: 'PATCH', path: `${base}/{task_uuid}` },
      async run({ db, caller }, { uuid, task_uuid, ...i }) {
        if (Object.values(i).every((v) => v === undefined)) throw validationError({ name: ['At least one field must be provided.'] });
        checkFrequency(i.frequency);
        return atomically(db, async (trx) => {
          const { r, t } = await ownedTask(trx, caller.teamId, kinds, uuid, task_uuid);
          const patch = {
            ...(i.name !== undefined ? { name: i.name } : {}),
            ...(i.command !== undefined ? { command: i.command } : {}),
            ...(i.frequency !== undefined ? { frequency: i.frequency.trim() } : {}),
            ...(i.container !== undefined ? { container: containerOf(r, i.container) } : {}),
            ...(i.timeout !== undefined ? { timeout: i.timeout } : {}),
            ...(i.enabled !== undefined ? { enabled: i.enabled ? 1 : 0 } : {}),
            updated_at: nowIso(),
          };
          await trx.updateTable('scheduled_tasks').set(patch).where('id', '=', t.id).execute();
          return taskView({ ...t, ...patch });
        });
      },
    }),
    defineOperation({
      name: `delete_${singular}_scheduled_task`,
      title: `Delete ${one} scheduled task`,
      description: `Delete a scheduled task of ${one} (task_uuid) and its recorded runs.`,
      summary: `Delete a scheduled task of ${one} and its executions.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject(taskParams),
      output: () => messageSchema,
      annotations: DELETE,
      http: { method: 'DELETE', path: `${base}/{task_uuid}` },
      async run({ db, caller }, { uuid, task_uuid }) {
        const { t } = await ownedTask(db, caller.teamId, kinds, uuid, task_uuid);
        await db.deleteFrom('scheduled_tasks').where('id', '=', t.id).execute();
        return { message: 'Scheduled task deleted.' };
      },
    }),
    defineOperation({
      name: `list_${singular}_scheduled_task_executions`,
      title: `List ${singular} task runs`,
      description: `The runs of a scheduled task of ${one} (task_uuid), latest first: status, message, exit_code, duration; the output (logs) needs read:sensitive and keeps its tail unless full is "true".`,
      summary: `The runs of a scheduled task, latest first: status, exit code, output (read:sensitive; the tail unless full=true).`,
      permission: 'read',
      toolset,
      input: () =>
        z.strictObject({
          ...taskParams,
          full: z
            .enum(['true', 'false'])
            .transform((v) => v === 'true')
            .optional(),
        }),
      output: () => z.array(executionSchema),
      annotations: READ,
      http: { method: 'GET', path: `${base}/{task_uuid}/executions` },
      async run({ db, caller }, { uuid, task_uuid, full }) {
        const { t } = await ownedTask(db, caller.teamId, kinds, uuid, task_uuid);
        const rows = await db.selectFrom('scheduled_task_executions').selectAll().where('task_id', '=', t.id).orderBy('id', 'desc').execute();
        return rows.map((e) => executionView(e, full ?? false));
      },
    }),
    defineOperation({
      name: `execute_${singular}_scheduled_task`,
      title: `Run ${one} task now`,
      description: `Run a scheduled task of ${one} once now, in the background; follow it with list_${singular}_scheduled_task_executions (execution_uuid).`,
      summary: `Run a scheduled task once now, in the background; follow it with list_${singular}_scheduled_task_executions.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject(taskParams),
      output: () => z.object({ message: z.string(), execution_uuid: z.string() }),
      annotations: ENGINE,
      http: { method: 'POST', path: `${base}/{task_uuid}/execute` },
      async run({ db, caller, jobs }, { uuid, task_uuid }) {
        const { t } = await ownedTask(db, caller.teamId, kinds, uuid, task_uuid);
        const execution_uuid = await jobs.runScheduledTask(t.id);
        return { message: 'Scheduled task execution queued.', execution_uuid };
      },
    }),
  ];
}
