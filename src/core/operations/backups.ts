import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import type { BackupExecutionsTable, ScheduledBackupsTable } from '../../store/schema.js';
import { cronPattern } from '../frequency.js';
import { BACKUP_KINDS, RESTORE_KINDS } from '../model/database.js';
import { BerthError, notFound, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { description, uuidParam } from '../validators.js';
import { bit, bool, CREATE, DELETE, messageSchema, READ, UPDATE } from './common.js';
import { serverOf } from './resource-common.js';
import { DATABASE_KINDS, type DatabaseKind } from '../model/kinds.js';
import { RECORD_ONLY_NOTE } from '../runtime.js';
import { brief } from '../runtime-fields.js';
import { answerBound, follow, followSchema, followText } from '../answer-bound.js';
import type { Jobs } from '../jobs.js';

type BackupRow = Omit<ScheduledBackupsTable, 'id'> & { id: number };
type ExecutionRow = Omit<BackupExecutionsTable, 'id'> & { id: number };

const base = '/api/v1/databases/{uuid}/backups';
const FREQUENCY_ERROR = 'Invalid cron expression or frequency format.';
const UNSUPPORTED = 'Scheduled backups are not supported for this database type.';

export const executionSchema = z.object({
  uuid: z.string(),
  filename: z.string().nullable(),
  size: z.number().int().nullable(),
  created_at: z.string(),
  /** berth's summary of the outcome (never holds secrets). */
  message: z.string().nullable(),
  status: z.enum(['running', 'success', 'failed']),
  database_name: z.string().nullable(),
  scheduled_for: z.string().nullable(),
  finished_at: z.string().nullable(),
  local_storage_deleted: z.boolean(),
  /** The dump tool's output. */
  logs: sensitive(z.string().nullable()),
  /**
   * The last restore of this execution's file (null: never restored), which may run past its
   * call's answer. Its details are left out of MCP schemas (the list's size budget), not answers.
   */
  restore_status: z.enum(['running', 'success', 'failed']).nullable(),
  restore_message: brief(z.string().nullable()),
  restore_started_at: brief(z.string().nullable()),
  restore_finished_at: brief(z.string().nullable()),
  /** The restore tool's output. */
  restore_logs: brief(sensitive(z.string().nullable())),
});

export const backupSchema = z.object({
  uuid: z.string(),
  database_uuid: z.string(),
  database_type: z.string(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  save_s3: z.boolean(),
  frequency: z.string(),
  databases_to_backup: z.string().nullable(),
  dump_all: z.boolean(),
  database_backup_retention_amount_locally: z.number().int(),
  database_backup_retention_days_locally: z.number().int(),
  database_backup_retention_max_storage_locally: z.number(),
  database_backup_retention_amount_s3: z.number().int(),
  database_backup_retention_days_s3: z.number().int(),
  database_backup_retention_max_storage_s3: z.number(),
  timeout: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
  executions: z.array(executionSchema),
});

function executionView(e: ExecutionRow): z.infer<typeof executionSchema> {
  return {
    uuid: e.uuid,
    filename: e.filename,
    size: e.size === null ? null : Number(e.size),
    created_at: e.created_at,
    message: e.message,
    status: e.status,
    database_name: e.database_name,
    scheduled_for: e.scheduled_for,
    finished_at: e.finished_at,
    local_storage_deleted: bool(e.local_storage_deleted),
    logs: e.logs,
    restore_status: e.restore_status ?? null,
    restore_message: e.restore_message ?? null,
    restore_started_at: e.restore_started_at ?? null,
    restore_finished_at: e.restore_finished_at ?? null,
    restore_logs: e.restore_logs ?? null,
  };
}

async function executionsOf(db: Db, backupId: number) {
  const rows = await db.selectFrom('scheduled_database_backup_executions').selectAll().where('backup_id', '=', backupId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map(executionView);
}

async function backupView(db: Db, b: BackupRow, r: { uuid: string; kind: string }): Promise<z.infer<typeof backupSchema>> {
  return {
    uuid: b.uuid,
    database_uuid: r.uuid,
    database_type: `standalone-${r.kind}`,
    description: b.description,
    enabled: bool(b.enabled),
    save_s3: bool(b.save_s3),
    frequency: b.frequency,
    databases_to_backup: b.databases_to_backup,
    dump_all: bool(b.dump_all),
    database_backup_retention_amount_locally: b.database_backup_retention_amount_locally,
    database_backup_retention_days_locally: b.database_backup_retention_days_locally,
    database_backup_retention_max_storage_locally: Number(b.database_backup_retention_max_storage_locally),
    database_backup_retention_amount_s3: b.database_backup_retention_amount_s3,
    database_backup_retention_days_s3: b.database_backup_retention_days_s3,
    database_backup_retention_max_storage_s3: Number(b.database_backup_retention_max_storage_s3),
    timeout: b.timeout,
    created_at: b.created_at,
    updated_at: b.updated_at,
    executions: await executionsOf(db, b.id),
  };
}

/** The database and one of its backup configurations, both in the caller's team. */
export async function ownedBackup(db: Db, uuid: string, backupUuid: string, teamId: number) {
  const r = await ownedResource(db, uuid, teamId, DATABASE_KINDS);
  const b = await db.selectFrom('scheduled_database_backups').selectAll().where('uuid', '=', backupUuid).where('team_id', '=', teamId).where('resource_id', '=', r.id).executeTakeFirst();
  if (!b) throw notFound();
  return { r, b };
}

/** The execution a restore loads, or why it cannot (the approval gate checks a held restore with it too). */
export async function restorable(db: Db, teamId: number, i: { uuid: string; scheduled_backup_uuid: string; execution_uuid: string }) {
  const found = await ownedExecution(db, i.uuid, i.scheduled_backup_uuid, i.execution_uuid, teamId);
  if (!RESTORE_KINDS.includes(found.r.kind as DatabaseKind)) throw validationError({ uuid: [`Restoring ${found.r.kind} backups is not supported.`] });
  const e = found.e;
  if (e.status !== 'success' || !e.filename || e.local_storage_deleted) throw validationError({ execution_uuid: ['Only a successful execution whose file is kept can be restored.'] });
  return found;
}

async function ownedExecution(db: Db, uuid: string, backupUuid: string, executionUuid: string, teamId: number) {
  const { r, b } = await ownedBackup(db, uuid, backupUuid, teamId);
  const e = await db.selectFrom('scheduled_database_backup_executions').selectAll().where('uuid', '=', executionUuid).where('backup_id', '=', b.id).executeTakeFirst();
  if (!e) throw notFound();
  return { r, b, e };
}

const count = z.number().int().min(0).max(1_000_000);
const gigabytes = z.number().min(0).max(1_000_000);

/** Coolify's backup configuration fields. S3 is not offered by berth: save_s3 must stay false. */
const settings = {
  description: description.nullable().optional(),
  enabled: z.boolean().optional(),
  save_s3: z.literal(false, { error: 'berth keeps backups on the database’s server; S3 is not available.' }).optional(),
  dump_all: z.boolean().optional(),
  databases_to_backup: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*$/, 'Comma-separated database names (letters, digits, _ and -).')
    .nullable()
    .optional(),
  database_backup_retention_amount_locally: count.optional(),
  database_backup_retention_days_locally: count.optional(),
  database_backup_retention_max_storage_locally: gigabytes.optional(),
  database_backup_retention_amount_s3: count.optional(),
  database_backup_retention_days_s3: count.optional(),
  database_backup_retention_max_storage_s3: gigabytes.optional(),
  timeout: z.number().int().min(60).max(36_000).optional(),
  backup_now: z.boolean().nullable().optional(),
};
const frequency = z.string().min(1).max(100);

type Settings = { [K in keyof typeof settings]?: z.infer<(typeof settings)[K]> } & { frequency?: string };

function columns(i: Settings): Partial<BackupRow> {
  const out: Partial<BackupRow> = {};
  if (i.frequency !== undefined) out.frequency = i.frequency.trim();
  if (i.description !== undefined) out.description = i.description;
  if (i.enabled !== undefined) out.enabled = bit(i.enabled);
  if (i.dump_all !== undefined) out.dump_all = bit(i.dump_all);
  if (i.databases_to_backup !== undefined) out.databases_to_backup = i.databases_to_backup;
  for (const k of [
    'database_backup_retention_amount_locally',
    'database_backup_retention_days_locally',
    'database_backup_retention_max_storage_locally',
    'database_backup_retention_amount_s3',
    'database_backup_retention_days_s3',
    'database_backup_retention_max_storage_s3',
    'timeout',
  ] as const) {
    if (i[k] !== undefined) out[k] = i[k];
  }
  return out;
}

function checkFrequency(f: string | undefined) {
  if (f !== undefined && !cronPattern(f)) throw validationError({ frequency: [FREQUENCY_ERROR] });
}

export const backupOperations = [
  defineOperation({
    name: 'list_database_backups',
    title: 'List database backups',
    description: 'The scheduled backups of a database (uuid from list_databases), each with its settings (frequency, enabled, retention) and its executions, newest first.',
    summary: 'List the scheduled backups of a database, each with its executions.',
    permission: 'read',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.array(backupSchema),
    annotations: READ,
    http: { method: 'GET', path: base },
    async run({ db, caller }, { uuid }) {
      const r = await ownedResource(db, uuid, caller.teamId, DATABASE_KINDS);
      const rows = await db
        .selectFrom('scheduled_database_backups')
        .selectAll()
        .where('resource_id', '=', r.id)
        .where('team_id', '=', caller.teamId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute();
      return Promise.all(rows.map((b) => backupView(db, b, r)));
    },
  }),
  defineOperation({
    name: 'create_database_backup',
    title: 'Schedule database backups',
    description:
      'Schedule backups of a database: frequency is a 5-field cron expression or every_minute, hourly, daily, weekly, monthly, yearly (UTC). Files stay on the database’s server. Retention: database_backup_retention_amount_locally (keep N), _days_locally, _max_storage_locally (GB); 0 keeps all. backup_now: true also runs one now; follow it with list_database_backup_executions.',
    summary: 'Schedule backups of a database (frequency: cron or every_minute/hourly/daily/weekly/monthly/yearly, UTC); backup_now runs one at once.',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam, frequency, ...settings }),
    output: () => z.object({ uuid: z.string(), message: z.string(), execution_uuid: z.string().optional() }),
    annotations: CREATE,
    http: { method: 'POST', path: base, status: 201 },
    async run({ db, caller, jobs }, i) {
      const r = await ownedResource(db, i.uuid, caller.teamId, DATABASE_KINDS);
      if (!BACKUP_KINDS.includes(r.kind as DatabaseKind)) throw validationError({ uuid: [UNSUPPORTED] });
      checkFrequency(i.frequency);
      const now = nowIso();
      const uuid = newUuid();
      const row = await db
        .insertInto('scheduled_database_backups')
        .values({
          uuid,
          team_id: caller.teamId,
          resource_id: r.id,
          description: null,
          enabled: 1,
          save_s3: 0,
          frequency: i.frequency,
          databases_to_backup: null,
          dump_all: 0,
          database_backup_retention_amount_locally: 0,
          database_backup_retention_days_locally: 0,
          database_backup_retention_max_storage_locally: 0,
          database_backup_retention_amount_s3: 0,
          database_backup_retention_days_s3: 0,
          database_backup_retention_max_storage_s3: 0,
          timeout: 3600,
          ...columns(i),
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const execution = i.backup_now ? await runNow(db, jobs, row.id) : undefined;
      return { uuid, message: 'Backup configuration created successfully.', ...(execution ? { execution_uuid: execution } : {}) };
    },
  }),
  defineOperation({
    name: 'update_database_backup',
    title: 'Change a database backup',
    description: 'Change a scheduled backup: frequency, enabled (false pauses it), retention. backup_now: true runs one now.',
    summary: 'Change a scheduled backup (frequency, enabled, retention); backup_now runs one at once.',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam, scheduled_backup_uuid: uuidParam, frequency: frequency.optional(), ...settings }),
    output: () => z.object({ message: z.string(), execution_uuid: z.string().optional() }),
    annotations: UPDATE,
    http: { method: 'PATCH', path: `${base}/{scheduled_backup_uuid}` },
    async run({ db, caller, jobs }, i) {
      const { b } = await ownedBackup(db, i.uuid, i.scheduled_backup_uuid, caller.teamId);
      checkFrequency(i.frequency);
      const set = columns(i);
      if (Object.keys(set).length)
        await db
          .updateTable('scheduled_database_backups')
          .set({ ...set, updated_at: nowIso() })
          .where('id', '=', b.id)
          .execute();
      const execution = i.backup_now ? await runNow(db, jobs, b.id) : undefined;
      return { message: 'Database backup configuration updated', ...(execution ? { execution_uuid: execution } : {}) };
    },
  }),
  defineOperation({
    name: 'delete_database_backup',
    title: 'Delete a database backup',
    description: 'Delete a scheduled backup, all its executions and their files on the server. Cannot be undone.',
    summary: 'Delete a scheduled backup with all its executions and their files on the server.',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam, scheduled_backup_uuid: uuidParam }),
    output: () => messageSchema,
    annotations: { ...DELETE, openWorld: true },
    http: { method: 'DELETE', path: `${base}/{scheduled_backup_uuid}` },
    async run({ db, caller, runtime, logger }, i) {
      const { r, b } = await ownedBackup(db, i.uuid, i.scheduled_backup_uuid, caller.teamId);
      const files = await db.selectFrom('scheduled_database_backup_executions').select('filename').where('backup_id', '=', b.id).where('local_storage_deleted', '=', 0).execute();
      await runtime
        .removeBackupFiles(
          r.id,
          files.map((f) => f.filename).filter((f): f is string => !!f),
        )
        .catch((err: Error) => logger.warn({ err: err.message }, 'backup files not removed'));
      await db.deleteFrom('scheduled_database_backups').where('id', '=', b.id).execute();
      return { message: 'Backup configuration and all executions deleted.' };
    },
  }),
  defineOperation({
    name: 'list_database_backup_executions',
    title: 'List backup executions',
    description: 'The runs of a scheduled backup, newest first: status (running, success, failed), filename, size in bytes, message; the dump tool’s logs need read:sensitive.',
    summary: 'List the executions of a scheduled backup, newest first (logs need read:sensitive).',
    permission: 'read',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam, scheduled_backup_uuid: uuidParam }),
    output: () => z.object({ executions: z.array(executionSchema) }),
    annotations: READ,
    http: { method: 'GET', path: `${base}/{scheduled_backup_uuid}/executions` },
    async run({ db, caller }, i) {
      const { b } = await ownedBackup(db, i.uuid, i.scheduled_backup_uuid, caller.teamId);
      return { executions: await executionsOf(db, b.id) };
    },
  }),
  defineOperation({
    name: 'delete_database_backup_execution',
    title: 'Delete a backup execution',
    description: 'Delete one backup run and its file on the server.',
    summary: 'Delete one backup execution and its file on the server.',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam, scheduled_backup_uuid: uuidParam, execution_uuid: uuidParam }),
    output: () => messageSchema,
    annotations: { ...DELETE, openWorld: true },
    http: { method: 'DELETE', path: `${base}/{scheduled_backup_uuid}/executions/{execution_uuid}` },
    async run({ db, caller, runtime, logger }, i) {
      const { r, e } = await ownedExecution(db, i.uuid, i.scheduled_backup_uuid, i.execution_uuid, caller.teamId);
      if (e.status === 'running') throw new BerthError('conflict', { message: 'The backup is still running; delete it once it has finished.' });
      if (e.filename && !e.local_storage_deleted) await runtime.removeBackupFiles(r.id, [e.filename]).catch((err: Error) => logger.warn({ err: err.message }, 'backup file not removed'));
      await db.deleteFrom('scheduled_database_backup_executions').where('id', '=', e.id).execute();
      return { message: 'Backup execution deleted.' };
    },
  }),
  defineOperation({
    name: 'restore_database_backup_execution',
    title: 'Restore a database backup',
    description:
      'Load a successful backup run back into its running database (PostgreSQL, MySQL, MariaDB, MongoDB): objects in the dump are dropped and recreated, so changes since the backup are lost. Answers when the restore ends, or within the answer bound with restore_status running (it goes on; follow the execution).',
    summary: 'Restore a successful backup execution into its running database (replaces the objects the dump holds). berth only; Coolify has no restore endpoint.',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam, scheduled_backup_uuid: uuidParam, execution_uuid: uuidParam }),
    output: () => z.object({ message: z.string(), logs: sensitive(z.string()), restore_status: z.enum(['running', 'success']), follow: followSchema }),
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    destroysData: true,
    http: { method: 'POST', path: `${base}/{scheduled_backup_uuid}/executions/{execution_uuid}/restore` },
    async run(ctx, i) {
      const { db, caller, runtime, jobs } = ctx;
      const bound = answerBound(ctx);
      const { r, b, e } = await restorable(db, caller.teamId, i);
      const live = runtime.isLive(await serverOf(db, r));
      const f = follow.backupExecutions(r.uuid, b.uuid);
      // The restore runs in the background of the process (recorded on the execution), never in
      // the call: an answer at the bound leaves it running.
      const okMessage = live ? 'Backup restored.' : `Nothing was restored. ${RECORD_ONLY_NOTE}`;
      const started = await jobs.restoreDatabaseBackup(e.id, { timeoutS: b.timeout, okMessage });
      if (!started) throw new BerthError('conflict', { message: `A restore of execution ${e.uuid} is running already; ${followText(f)}.` });
      const w = await bound.wait(started.done, async () => ({ message: `restore of ${e.uuid}: running, ${bound.seconds()} s` }));
      if (!w.ended) {
        const message = `The restore is running after ${bound.seconds()} s and goes on: restore_status of execution ${e.uuid} says when it ends; ${followText(f)}.`;
        bound.finish({ message });
        return { message, logs: '', restore_status: 'running' as const, follow: f };
      }
      bound.finish({ message: w.value.message });
      if (!w.value.ok) throw new BerthError('conflict', { message: w.value.message });
      return { message: okMessage, logs: w.value.logs, restore_status: 'success' as const, follow: f };
    },
  }),
];

/** Claims an on-demand execution and starts it; the caller follows it in the executions list. */
async function runNow(db: Db, jobs: Jobs, backupId: number): Promise<string> {
  const id = await jobs.runDatabaseBackup(backupId);
  const row = await db.selectFrom('scheduled_database_backup_executions').select('uuid').where('id', '=', id).executeTakeFirstOrThrow();
  return row.uuid;
}
