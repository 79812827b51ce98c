import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { atomically } from '../../store/atomic.js';
import { nowIso } from '../../store/db.js';
import type { Selectable } from 'kysely';
import type { EnvironmentVariablesTable, FileStoragesTable, StoragesTable } from '../../store/schema.js';
import { BerthError, notFound, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { ownedResource } from '../lookup.js';
import { volumeName } from '../model/volumes.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { engineName, envKey, envValue, flag, mountPath, uuidParam } from '../validators.js';
import { bit, bool, CREATE, DELETE, messageSchema, READ, stamps, UPDATE } from './common.js';
import { truncateLog } from './deployments.js';
import { config, perCollection } from './resource-common.js';
import type { Collection } from '../model/kinds.js';

type EnvRow = Omit<EnvironmentVariablesTable, 'id'> & { id: number };

export const envSchema = z.object({
  uuid: z.string(),
  key: z.string(),
  /** Sensitive; never shown for is_shown_once variables, whoever asks. */
  value: sensitive(z.string().nullable()),
  is_preview: z.boolean(),
  is_literal: z.boolean(),
  is_multiline: z.boolean(),
  is_shown_once: z.boolean(),
  is_runtime: z.boolean(),
  is_buildtime: z.boolean(),
  comment: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

function envView(e: EnvRow): z.infer<typeof envSchema> {
  const base = {
    uuid: e.uuid,
    key: e.key,
    is_preview: bool(e.is_preview),
    is_literal: bool(e.is_literal),
    is_multiline: bool(e.is_multiline),
    is_shown_once: bool(e.is_shown_once),
    is_runtime: bool(e.is_runtime),
    is_buildtime: bool(e.is_buildtime),
    comment: e.comment,
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
  return e.is_shown_once ? base : { ...base, value: e.value };
}

const envFlags = {
  is_preview: z.boolean().optional(),
  is_literal: z.boolean().optional(),
  is_multiline: z.boolean().optional(),
  is_shown_once: z.boolean().optional(),
  is_runtime: z.boolean().optional(),
  is_buildtime: z.boolean().optional(),
  comment: z.string().max(256).nullable().optional(),
};

const envFields = (i: { value?: string | null } & { [K in keyof typeof envFlags]?: unknown }) => {
  const out: Partial<EnvRow> = {};
  if (i.value !== undefined) out.value = i.value;
  for (const k of ['is_preview', 'is_literal', 'is_multiline', 'is_shown_once', 'is_runtime', 'is_buildtime'] as const) {
    if (i[k] !== undefined) out[k] = bit(i[k] as boolean);
  }
  if (i.comment !== undefined) out.comment = i.comment as string | null;
  return out;
};

/** A new variable: Coolify's defaults (runtime and build time, not literal), then what was given. */
export const newEnvRow = (resourceId: number, key: string, i: Parameters<typeof envFields>[0]) => ({
  uuid: newUuid(),
  resource_id: resourceId,
  key,
  value: null,
  is_preview: 0,
  is_literal: 0,
  is_multiline: 0,
  is_shown_once: 0,
  is_runtime: 1,
  is_buildtime: 1,
  comment: null,
  ...envFields(i),
  ...stamps(),
});

/** Environment variables of one collection: list, create, update by key, delete by uuid. */
export function envOperations(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  const base = `/api/v1/${collection}/{uuid}/envs`;
  return [
    defineOperation({
      name: `list_${singular}_envs`,
      title: `List ${singular} variables`,
      description: `List the environment variables of ${one}. Values are shown only with read:sensitive (never for is_shown_once variables).`,
      summary: `List the environment variables of ${one} (values need read:sensitive).`,
      permission: 'read',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam }),
      output: () => z.array(envSchema),
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, { uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        const rows = await db.selectFrom('environment_variables').selectAll().where('resource_id', '=', r.id).orderBy('is_preview').orderBy('id').execute();
        return rows.map(envView);
      },
    }),
    defineOperation({
      name: `create_${singular}_env`,
      title: `Add ${one} variable`,
      description: `Add an environment variable (key, value) to ${one}. Redeploy or restart for it to reach the container.`,
      summary: `Add an environment variable to ${one}; redeploy to apply it.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam, key: envKey, value: envValue.optional(), ...envFlags }),
      output: () => z.object({ uuid: z.string() }),
      annotations: CREATE,
      http: { method: 'POST', path: base, status: 201 },
      async run({ db, caller }, { uuid, key, ...i }) {
        // Check and insert together: of racing creates of one key, one 201 and the others 409.
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const preview = bit(i.is_preview);
          const exists = await trx.selectFrom('environment_variables').select('id').where('resource_id', '=', r.id).where('key', '=', key).where('is_preview', '=', preview).executeTakeFirst();
          if (exists) throw new BerthError('conflict', { message: 'Environment variable already exists. Use PATCH request to update it.' });
          const row = newEnvRow(r.id, key, i);
          await trx.insertInto('environment_variables').values(row).execute();
          return { uuid: row.uuid };
        });
      },
    }),
    defineOperation({
      name: `update_${singular}_env`,
      title: `Change ${one} variable`,
      description: `Change the environment variable of ${one} that has the given key. Redeploy or restart to apply.`,
      summary: `Change an environment variable of ${one}, found by its key.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam, key: envKey, value: envValue.optional(), ...envFlags }),
      output: () => envSchema,
      annotations: UPDATE,
      http: { method: 'PATCH', path: base, status: 201 },
      async run({ db, caller }, { uuid, key, ...i }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        const e = await db.selectFrom('environment_variables').selectAll().where('resource_id', '=', r.id).where('key', '=', key).where('is_preview', '=', bit(i.is_preview)).executeTakeFirst();
        if (!e) throw notFound();
        const patch = { ...envFields(i), updated_at: nowIso() };
        await db.updateTable('environment_variables').set(patch).where('id', '=', e.id).execute();
        return envView({ ...e, ...patch });
      },
    }),
    defineOperation({
      name: `update_${singular}_envs_bulk`,
      title: `Set ${singular} variables in bulk`,
      description: `Create or change several environment variables of ${one} at once (data: [{ key, value, ... }]); all or none. Redeploy or restart to apply.`,
      summary: `Create or change several environment variables of ${one} at once, by key: all of them or, on any error, none.`,
      permission: 'write',
      toolset,
      input: () =>
        z.strictObject({
          uuid: uuidParam,
          data: z
            .array(z.strictObject({ key: envKey, value: envValue.optional(), ...envFlags }))
            .min(1)
            .max(500),
        }),
      output: () => z.array(envSchema),
      annotations: UPDATE,
      http: { method: 'PATCH', path: `${base}/bulk`, status: 201 },
      async run({ db, caller }, { uuid, data }) {
        // The same key (and preview flag) twice would make the answer depend on the order.
        const seen = new Map<string, number>();
        data.forEach((d, n) => {
          const k = `${bit(d.is_preview)}|${d.key}`;
          const first = seen.get(k);
          if (first !== undefined) throw validationError({ [`data.${n}.key`]: [`${d.key} is also data.${first}; give each key once.`] });
          seen.set(k, n);
        });
        // One serializable transaction (store/atomic.ts): racing bulks that create one key both
        // succeed, one after the other, instead of one failing on the unique key.
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const out: z.infer<typeof envSchema>[] = [];
          for (const { key, ...i } of data) {
            const e = await trx.selectFrom('environment_variables').selectAll().where('resource_id', '=', r.id).where('key', '=', key).where('is_preview', '=', bit(i.is_preview)).executeTakeFirst();
            if (e) {
              const patch = { ...envFields(i), updated_at: nowIso() };
              await trx.updateTable('environment_variables').set(patch).where('id', '=', e.id).execute();
              out.push(envView({ ...e, ...patch }));
            } else {
              const row = newEnvRow(r.id, key, i);
              const { id } = await trx.insertInto('environment_variables').values(row).returning('id').executeTakeFirstOrThrow();
              out.push(envView({ ...row, id }));
            }
          }
          return out;
        });
      },
    }),
    defineOperation({
      name: `delete_${singular}_env`,
      title: `Delete ${one} variable`,
      description: `Delete an environment variable of ${one} by its uuid (env_uuid).`,
      summary: `Delete an environment variable of ${one} by its uuid.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam, env_uuid: uuidParam }),
      output: () => messageSchema,
      annotations: DELETE,
      http: { method: 'DELETE', path: `${base}/{env_uuid}` },
      async run({ db, caller }, { uuid, env_uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        const d = await db.deleteFrom('environment_variables').where('resource_id', '=', r.id).where('uuid', '=', env_uuid).executeTakeFirst();
        if (d.numDeletedRows === 0n) throw notFound();
        return { message: 'Environment variable deleted.' };
      },
    }),
  ];
}

export const storageSchema = z.object({
  uuid: z.string(),
  /** The store's id: Coolify clients may name a storage by it on update. */
  id: z.number().int(),
  name: z.string(),
  mount_path: z.string(),
  /** berth: the compose service that mounts it (services only). */
  container: z.string().nullable(),
  /** berth: the engine volume name that holds the data. */
  volume_name: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A file (content) or directory written into the container at mount_path on each deploy. */
export const fileStorageSchema = z.object({
  uuid: z.string(),
  id: z.number().int(),
  mount_path: z.string(),
  /** The file's text; sensitive (configuration files hold secrets). */
  content: sensitive(z.string().nullable()),
  is_directory: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** One storage of either kind, as create and update answer it (an MCP output is one object). */
const anyStorageSchema = z.object({
  ...fileStorageSchema.shape,
  content: fileStorageSchema.shape.content.optional(),
  is_directory: z.boolean().optional(),
  name: z.string().optional(),
  container: z.string().nullable().optional(),
  volume_name: z.string().optional(),
});

type StorageRow = Selectable<StoragesTable>;
type FileRow = Selectable<FileStoragesTable>;
const storageView = (resourceUuid: string, s: StorageRow) => ({
  uuid: s.uuid,
  id: s.id,
  name: s.name,
  mount_path: s.mount_path,
  container: s.container,
  volume_name: s.engine_volume ?? volumeName(resourceUuid, s.name),
  created_at: s.created_at,
  updated_at: s.updated_at,
});
const fileView = (f: FileRow) => ({ uuid: f.uuid, id: f.id, mount_path: f.mount_path, content: f.content, is_directory: f.is_directory === 1, created_at: f.created_at, updated_at: f.updated_at });

/** Coolify's host-path fields: berth mounts no host path through a storage. */
const HOST_PATHS = 'berth does not mount host paths as storages (a directory file storage is created empty in the container instead)';
const STORAGE_UNSUPPORTED = {
  host_path: HOST_PATHS,
  fs_path: HOST_PATHS,
  is_host_file: HOST_PATHS,
  is_preview_suffix_enabled: { hint: "a pull request's preview always has its own volumes (the -pr-N suffix): send true or leave it out", accepts: [true] },
};

const wrongType = (fields: string[], i: Record<string, unknown>, type: string) => {
  const bad = fields.filter((f) => i[f] !== undefined);
  if (bad.length) throw validationError(Object.fromEntries(bad.map((f) => [f, [`Field '${f}' is not valid for type '${type}'.`]])));
};

/** A mount path already used by another storage of the resource (either kind), as a 422. */
async function mountTaken(db: Db, resourceId: number, mount_path: string, except: { table: 'storages' | 'file_storages'; id: number } | null) {
  const [vols, files] = await Promise.all([
    db.selectFrom('storages').select(['id', 'mount_path']).where('resource_id', '=', resourceId).execute(),
    db.selectFrom('file_storages').select(['id', 'mount_path']).where('resource_id', '=', resourceId).execute(),
  ]);
  const clash = (rows: { id: number; mount_path: string }[], table: 'storages' | 'file_storages') => rows.some((x) => x.mount_path === mount_path && !(except?.table === table && except.id === x.id));
  if (clash(vols, 'storages') || clash(files, 'file_storages')) throw validationError({ mount_path: ['Another storage is mounted there.'] });
}

/**
 * Storages of one collection: persistent volumes and file storages (a file with its content, or
 * a directory, written into the container). Services derive their volumes from compose.
 */
export function storageOperations(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  const base = `/api/v1/${collection}/{uuid}/storages`;
  const ops = [
    defineOperation({
      name: `list_${singular}_storages`,
      title: `List ${singular} volumes`,
      description: `List the persistent volumes of ${one}: name, mount path, and the engine volume that holds the data (what a migration copies).`,
      summary: `List the persistent volumes and file storages of ${one} (file contents need read:sensitive).`,
      permission: 'read',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam }),
      output: () => z.object({ persistent_storages: z.array(storageSchema), file_storages: z.array(fileStorageSchema) }),
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, { uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        const [vols, files] = await Promise.all([
          db.selectFrom('storages').selectAll().where('resource_id', '=', r.id).orderBy('id').execute(),
          db.selectFrom('file_storages').selectAll().where('resource_id', '=', r.id).orderBy('id').execute(),
        ]);
        return { persistent_storages: vols.map((s) => storageView(r.uuid, s)), file_storages: files.map(fileView) };
      },
    }),
  ];
  if (collection === 'services') return ops;
  return [
    ...ops,
    defineOperation({
      name: `create_${singular}_storage`,
      title: `Add ${one} volume`,
      description: `Add a persistent named volume to ${one} at mount_path (absolute, no ".."). Redeploy to mount it.`,
      summary: `Add a persistent volume (type "persistent", name) or a file storage (type "file": content, or is_directory) to ${one} at mount_path; redeploy to apply.`,
      permission: 'write',
      toolset,
      input: () =>
        z.strictObject({
          uuid: uuidParam,
          type: z.enum(['persistent', 'file']),
          name: engineName.optional(),
          mount_path: mountPath,
          content: z.string().max(1_048_576).nullable().optional(),
          is_directory: z.boolean().optional(),
        }),
      output: () => anyStorageSchema,
      annotations: CREATE,
      http: { method: 'POST', path: base, status: 201 },
      unsupported: STORAGE_UNSUPPORTED,
      async run({ db, caller }, i) {
        if (i.type === 'persistent') {
          wrongType(['content', 'is_directory'], i, 'persistent');
          if (!i.name) throw validationError({ name: ['The name field is required for persistent storages.'] });
        } else {
          wrongType(['name'], i, 'file');
          if (i.is_directory && i.content != null) throw validationError({ content: ['A directory has no content.'] });
        }
        // Checks and insert in one transaction: two racing mounts at one path cannot both land.
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, i.uuid, caller.teamId, kinds);
          await mountTaken(trx, r.id, i.mount_path, null);
          if (i.type === 'file') {
            const f = await trx
              .insertInto('file_storages')
              .values({ uuid: newUuid(), resource_id: r.id, mount_path: i.mount_path, content: i.is_directory ? null : (i.content ?? ''), is_directory: bit(i.is_directory), ...stamps() })
              .returningAll()
              .executeTakeFirstOrThrow();
            return fileView(f);
          }
          const taken = await trx.selectFrom('storages').select('id').where('resource_id', '=', r.id).where('name', '=', i.name!).executeTakeFirst();
          if (taken) throw validationError({ name: ['A storage with this name already exists.'] });
          const s = await trx
            .insertInto('storages')
            .values({ uuid: newUuid(), resource_id: r.id, name: i.name!, mount_path: i.mount_path, container: null, engine_volume: null, ...stamps() })
            .returningAll()
            .executeTakeFirstOrThrow();
          return storageView(r.uuid, s);
        });
      },
    }),
    defineOperation({
      name: `update_${singular}_storage`,
      title: `Move ${one} volume`,
      description: `Mount a persistent volume of ${one} (storage_uuid) at another mount_path; its data and engine volume stay. Redeploy to apply.`,
      summary: `Change a storage of ${one}, named by storage_uuid (REST body: uuid) or id: a volume's mount_path (its name stays: it names the engine volume), a file's mount_path or content. Redeploy to apply.`,
      permission: 'write',
      toolset,
      input: () =>
        z.strictObject({
          uuid: uuidParam,
          storage_uuid: uuidParam.optional(),
          id: z.number().int().min(1).optional(),
          type: z.enum(['persistent', 'file']).optional(),
          mount_path: mountPath.optional(),
          content: z.string().max(1_048_576).nullable().optional(),
        }),
      output: () => anyStorageSchema,
      annotations: UPDATE,
      http: { method: 'PATCH', path: base, bodyNames: { uuid: 'storage_uuid' } },
      unsupported: { ...STORAGE_UNSUPPORTED, name: "a volume's name names its engine volume and stays; create another storage instead" },
      async run({ db, caller }, i) {
        if (i.storage_uuid === undefined && i.id === undefined) throw validationError({ storage_uuid: ['Either uuid or id is required.'] });
        if (i.type === 'persistent') wrongType(['content'], i, 'persistent');
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, i.uuid, caller.teamId, kinds);
          const match = <T extends { uuid: string; id: number }>(rows: T[]) => rows.find((x) => (i.storage_uuid !== undefined ? x.uuid === i.storage_uuid : x.id === i.id));
          const s = i.type === 'file' ? undefined : match(await trx.selectFrom('storages').selectAll().where('resource_id', '=', r.id).execute());
          const f = s || i.type === 'persistent' ? undefined : match(await trx.selectFrom('file_storages').selectAll().where('resource_id', '=', r.id).execute());
          if (!s && !f) throw notFound();
          const updated_at = nowIso();
          if (s) {
            wrongType(['content'], i, 'persistent');
            if (i.mount_path === undefined) return storageView(r.uuid, s);
            await mountTaken(trx, r.id, i.mount_path, { table: 'storages', id: s.id });
            await trx.updateTable('storages').set({ mount_path: i.mount_path, updated_at }).where('id', '=', s.id).execute();
            return storageView(r.uuid, { ...s, mount_path: i.mount_path, updated_at });
          }
          const file = f!;
          if (file.is_directory === 1 && i.content != null) throw validationError({ content: ['A directory has no content.'] });
          if (i.mount_path !== undefined) await mountTaken(trx, r.id, i.mount_path, { table: 'file_storages', id: file.id });
          const next = { ...file, mount_path: i.mount_path ?? file.mount_path, content: i.content === undefined || file.is_directory === 1 ? file.content : (i.content ?? ''), updated_at };
          await trx.updateTable('file_storages').set({ mount_path: next.mount_path, content: next.content, updated_at }).where('id', '=', file.id).execute();
          return fileView(next);
        });
      },
    }),
    defineOperation({
      name: `delete_${singular}_storage`,
      title: `Remove ${one} volume`,
      description: `Remove a persistent volume from ${one}'s records. The data on the engine is not deleted.`,
      summary: `Remove a storage from ${one}: a volume from the records (the engine volume is kept), or a file storage; redeploy to apply.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam }),
      output: () => messageSchema,
      annotations: DELETE,
      http: { method: 'DELETE', path: `${base}/{storage_uuid}` },
      async run({ db, caller }, { uuid, storage_uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        const d = await db.deleteFrom('storages').where('resource_id', '=', r.id).where('uuid', '=', storage_uuid).executeTakeFirst();
        const f = d.numDeletedRows === 0n ? await db.deleteFrom('file_storages').where('resource_id', '=', r.id).where('uuid', '=', storage_uuid).executeTakeFirst() : d;
        if (f.numDeletedRows === 0n) throw notFound();
        return { message: 'Storage deleted.' };
      },
    }),
  ];
}

/** Coolify's log query: how many lines from the end, and whether each starts with its engine timestamp. */
export const logInput = {
  lines: z.coerce.number().int().min(1).max(10_000).default(100),
  // Named in the tools' descriptions, left out of their schemas (berth.brief): every tools/list pays for it.
  show_timestamps: flag.meta({ 'berth.brief': true }).optional(),
};

/** Container logs of a resource: sensitive, so the operation itself needs read:sensitive. */
export function logOperation(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  return defineOperation({
    name: `get_${singular}_logs`,
    title: `Get ${singular} logs`,
    description: `Last lines (default 100) of ${one}'s container logs (read:sensitive)${collection !== 'databases' ? '; sub_service_name: one container' : ''}; show_timestamps adds times; long logs keep their tail unless full.`,
    default: true,
    summary: `Recent container logs of ${one} (read:sensitive)${collection === 'services' ? '; sub_service_name picks one compose container' : ''}.`,
    permission: 'read:sensitive',
    toolset,
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        ...logInput,
        full: z
          .enum(['true', 'false'])
          .transform((v) => v === 'true')
          .optional(),
        // Coolify requires it on service logs; berth without it gives every container's, each line prefixed (a dockercompose application's too).
        ...(collection !== 'databases' ? { sub_service_name: z.string().min(1).max(255).meta({ 'berth.brief': true }).optional() } : {}),
      }),
    output: () => z.object({ logs: sensitive(z.string()), truncated: z.boolean() }),
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: true },
    http: { method: 'GET', path: `/api/v1/${collection}/{uuid}/logs` },
    async run({ db, caller, runtime }, i) {
      const { uuid, lines, full, show_timestamps } = i;
      const sub = (i as { sub_service_name?: string }).sub_service_name;
      const r = await ownedResource(db, uuid, caller.teamId, kinds);
      // As Coolify: a name that is none of the service's containers is a 404.
      const c = config<{ containers?: { name: string }[]; compose?: { containers: { name: string }[] } }>(r);
      if (sub !== undefined && !(c.containers ?? c.compose?.containers ?? []).some((k) => k.name === sub)) throw notFound();
      const t = truncateLog(await runtime.logs(r.id, { lines, timestamps: Boolean(show_timestamps), ...(sub !== undefined ? { container: sub } : {}) }), Boolean(full));
      return { logs: t.text, truncated: t.truncated };
    },
  });
}
