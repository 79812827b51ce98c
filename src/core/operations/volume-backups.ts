import { z } from 'zod';
import { VOLUME_BACKUP_DEFAULTS, type VolumeBackupSettings } from '../model/volume-backup.js';
import { nowIso, type Db } from '../../store/db.js';
import { notFound, validationError } from '../../errors.js';
import { cronPattern, FREQUENCY_HELP } from '../frequency.js';
import { newUuid } from '../../ids.js';
import { owned, ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { uuidParam } from '../validators.js';
import { messageSchema, READ, stamps } from './common.js';
import { perCollection } from './resource-common.js';
import { KINDS_OF, type Collection } from '../model/kinds.js';

const settingsShape = {
  frequency: z.string(),
  enabled: z.boolean(),
  save_s3: z.boolean(),
  disable_local_backup: z.boolean(),
  stop_during_backup: z.boolean(),
  s3_storage_uuid: z.string().nullable(),
  retention_amount_locally: z.number().int(),
  retention_days_locally: z.number().int(),
  retention_max_storage_locally: z.number(),
  retention_amount_s3: z.number().int(),
  retention_days_s3: z.number().int(),
  retention_max_storage_s3: z.number(),
  timeout: z.number().int(),
};

const scheduleSchema = z.object({ uuid: z.string(), storage_uuid: z.string(), storage_type: z.literal('persistent'), ...settingsShape });

const executionSchema = z.object({
  uuid: z.string(),
  status: z.enum(['running', 'success', 'failed']),
  message: z.string().nullable(),
  /** The archive tool's output: needs read:sensitive, like logs. */
  logs: sensitive(z.string().nullable()),
  size: z.number().nullable(),
  filename: z.string().nullable(),
  scheduled_for: z.string().nullable(),
  finished_at: z.string().nullable(),
  created_at: z.string(),
});

const upsertInput = {
  frequency: z.string().min(1).max(255).describe(FREQUENCY_HELP),
  enabled: z.boolean().optional(),
  save_s3: z.boolean().optional(),
  disable_local_backup: z.boolean().optional(),
  stop_during_backup: z.boolean().optional(),
  s3_storage_uuid: z.string().max(64).nullable().optional(),
  retention_amount_locally: z.number().int().min(0).max(10_000).optional(),
  retention_days_locally: z.number().int().min(0).max(2_147_483_647).optional(),
  retention_max_storage_locally: z.number().min(0).max(9_999_999_999).optional(),
  retention_amount_s3: z.number().int().min(0).max(10_000).optional(),
  retention_days_s3: z.number().int().min(0).max(2_147_483_647).optional(),
  retention_max_storage_s3: z.number().min(0).max(9_999_999_999).optional(),
  timeout: z.number().int().min(60).max(36_000).optional(),
};

/** The storage (by uuid) of a team's resource of this collection, or the same 404 as a missing one. */
async function ownedStorage(db: Db, teamId: number, collection: Collection, uuid: string, storageUuid: string) {
  const r = await ownedResource(db, uuid, teamId, KINDS_OF[collection]);
  const s = await db.selectFrom('storages').select(['id', 'uuid']).where('resource_id', '=', r.id).where('uuid', '=', storageUuid).executeTakeFirst();
  if (!s) throw notFound();
  return s;
}

const scheduleOf = (db: Db, storageId: number) => db.selectFrom('scheduled_volume_backups').selectAll().where('storage_id', '=', storageId).executeTakeFirst();

/**
 * Coolify's storage backups of one collection: PUT sets a storage's schedule, DELETE removes it,
 * POST …/run backs the volume up now; GET (berth's) shows the schedule and its recent runs.
 */
export function volumeBackupOperations(collection: Collection) {
  const { singular, one } = perCollection(collection);
  const base = `/api/v1/${collection}/{uuid}/storages/{storage_uuid}/backups`;
  return [
    defineOperation({
      name: `get_${singular}_storage_backup`,
      title: `Get ${one} volume backup`,
      description: `The backup schedule of a volume of ${one} (storage_uuid) and its latest runs: status, archive file, size; the tool output needs read:sensitive.`,
      summary: `The backup schedule of ${one}'s volume and its 20 latest runs (archives in the server's backup volume).`,
      permission: 'read',
      toolset: 'backups',
      input: () => z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam }),
      output: () => scheduleSchema.extend({ executions: z.array(executionSchema) }),
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, { uuid, storage_uuid }) {
        const s = await ownedStorage(db, caller.teamId, collection, uuid, storage_uuid);
        const b = await scheduleOf(db, s.id);
        if (!b) throw notFound();
        const executions = await db
          .selectFrom('scheduled_volume_backup_executions')
          .select(['uuid', 'status', 'message', 'logs', 'size', 'filename', 'scheduled_for', 'finished_at', 'created_at'])
          .where('backup_id', '=', b.id)
          .orderBy('id', 'desc')
          .limit(20)
          .execute();
        return {
          uuid: b.uuid,
          storage_uuid: s.uuid,
          storage_type: 'persistent' as const,
          ...(JSON.parse(b.settings) as VolumeBackupSettings),
          executions: executions.map((e) => ({ ...e, size: e.size === null ? null : Number(e.size) })),
        };
      },
    }),
    defineOperation({
      name: `update_${singular}_storage_backup`,
      title: `Schedule ${one} volume backup`,
      description: `Create or change the backup schedule of a volume of ${one}: frequency (cron, UTC, or hourly/daily/...), retention_amount_locally, stop_during_backup. Archives (tar.gz) stay in the server's backup volume; S3 is not supported yet.`,
      summary: `Create or change the backup schedule of ${one}'s volume (frequency, retention, stop_during_backup).`,
      permission: 'write',
      toolset: 'backups',
      input: () => z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam, ...upsertInput }),
      output: () => scheduleSchema.extend({ message: z.string() }),
      annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: false },
      http: { method: 'PUT', path: base },
      async run({ db, caller }, { uuid, storage_uuid, ...i }) {
        const s = await ownedStorage(db, caller.teamId, collection, uuid, storage_uuid);
        if (!cronPattern(i.frequency)) throw validationError({ frequency: [`Invalid frequency. ${FREQUENCY_HELP}`] });
        // A named S3 storage must be the team's own, as every reference is (kept for when uploads come).
        if (i.s3_storage_uuid) await owned(db, 's3_storages', i.s3_storage_uuid, caller.teamId);
        if (i.save_s3) throw validationError({ save_s3: ['berth keeps volume backups on the server (its backup volume); S3 uploads are not supported yet.'] });
        const existing = await scheduleOf(db, s.id);
        const settings: VolumeBackupSettings = {
          ...VOLUME_BACKUP_DEFAULTS,
          ...(existing ? (JSON.parse(existing.settings) as VolumeBackupSettings) : {}),
          ...i,
          save_s3: false,
          disable_local_backup: false,
        };
        const backupUuid = existing?.uuid ?? newUuid();
        if (existing)
          await db
            .updateTable('scheduled_volume_backups')
            .set({ settings: JSON.stringify(settings), updated_at: nowIso() })
            .where('id', '=', existing.id)
            .execute();
        else
          await db
            .insertInto('scheduled_volume_backups')
            .values({ uuid: backupUuid, storage_id: s.id, settings: JSON.stringify(settings), ...stamps() })
            .execute();
        return {
          uuid: backupUuid,
          message: existing ? 'Storage backup schedule updated.' : 'Storage backup schedule created.',
          storage_uuid: s.uuid,
          storage_type: 'persistent' as const,
          ...settings,
        };
      },
    }),
    defineOperation({
      name: `delete_${singular}_storage_backup`,
      title: `Remove ${one} volume backup`,
      description: `Remove the backup schedule of a volume of ${one}. Archives already made stay on the server.`,
      summary: `Remove the backup schedule of ${one}'s volume (the archives already made stay in the backup volume).`,
      permission: 'write',
      toolset: 'backups',
      input: () => z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam }),
      output: () => messageSchema,
      annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: false },
      http: { method: 'DELETE', path: base },
      async run({ db, caller }, { uuid, storage_uuid }) {
        const s = await ownedStorage(db, caller.teamId, collection, uuid, storage_uuid);
        const d = await db.deleteFrom('scheduled_volume_backups').where('storage_id', '=', s.id).executeTakeFirst();
        if (d.numDeletedRows === 0n) throw notFound();
        return { message: 'Storage backup schedule deleted.' };
      },
    }),
    defineOperation({
      name: `run_${singular}_storage_backup`,
      title: `Back up ${one} volume now`,
      description: `Archive a volume of ${one} now (it needs a schedule). Follow it with get_${singular}_storage_backup.`,
      summary: `Back up ${one}'s volume now (it needs a schedule); follow the run with get_${singular}_storage_backup.`,
      permission: 'write',
      toolset: 'backups',
      input: () => z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam }),
      output: () => z.object({ message: z.string(), uuid: z.string(), execution_uuid: z.string() }),
      annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: true },
      http: { method: 'POST', path: `${base}/run` },
      async run({ db, caller, jobs }, { uuid, storage_uuid }) {
        const s = await ownedStorage(db, caller.teamId, collection, uuid, storage_uuid);
        const b = await scheduleOf(db, s.id);
        if (!b) throw notFound();
        // An archive can take minutes: the answer does not wait for it.
        const executionUuid = await jobs.runVolumeBackup(b.id);
        return { message: 'Storage backup queued.', uuid: b.uuid, execution_uuid: executionUuid };
      },
    }),
  ];
}
