import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { atomically } from '../../store/atomic.js';
import { nowIso } from '../../store/db.js';
import type { EnvironmentVariablesTable } from '../../store/schema.js';
import { BerthError, notFound, validationError } from '../errors.js';
import { newUuid } from '../ids.js';
import { ownedResource } from '../lookup.js';
import { volumeName } from '../model/volumes.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { engineName, envKey, envValue, mountPath, uuidParam } from '../validators.js';
import { bit, bool, CREATE, DELETE, messageSchema, READ, stamps, UPDATE } from './common.js';
import { truncateLog } from './deployments.js';
import { TOOLSET_OF } from './resource-common.js';
import { KINDS_OF, SINGULAR, type Collection } from '../model/kinds.js';

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

/** Environment variables of one collection: list, create, update by key, delete by uuid. */
export function envOperations(collection: Collection) {
  const singular = SINGULAR[collection];
  const kinds = KINDS_OF[collection];
  const toolset = TOOLSET_OF[collection];
  const base = `/api/v1/${collection}/{uuid}/envs`;
  return [
    defineOperation({
      name: `list_${singular}_envs`,
      summary: `List the environment variables of a ${singular} (values need read:sensitive).`,
      permission: 'read',
      toolset,
      input: z.strictObject({ uuid: uuidParam }),
      output: z.array(envSchema),
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
      summary: `Add an environment variable to a ${singular}; redeploy to apply it.`,
      permission: 'write',
      toolset,
      input: z.strictObject({ uuid: uuidParam, key: envKey, value: envValue.optional(), ...envFlags }),
      output: z.object({ uuid: z.string() }),
      annotations: CREATE,
      http: { method: 'POST', path: base, status: 201 },
      async run({ db, caller }, { uuid, key, ...i }) {
        // Check and insert together: of racing creates of one key, one 201 and the others 409.
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const preview = bit(i.is_preview);
          const exists = await trx.selectFrom('environment_variables').select('id').where('resource_id', '=', r.id).where('key', '=', key).where('is_preview', '=', preview).executeTakeFirst();
          if (exists) throw new BerthError('conflict', { message: 'Environment variable already exists. Use PATCH request to update it.' });
          const envUuid = newUuid();
          await trx
            .insertInto('environment_variables')
            .values({ uuid: envUuid, resource_id: r.id, key, value: null, is_preview: 0, is_literal: 0, is_multiline: 0, is_shown_once: 0, is_runtime: 1, is_buildtime: 1, comment: null, ...envFields(i), ...stamps() })
            .execute();
          return { uuid: envUuid };
        });
      },
    }),
    defineOperation({
      name: `update_${singular}_env`,
      summary: `Change an environment variable of a ${singular}, found by its key.`,
      permission: 'write',
      toolset,
      input: z.strictObject({ uuid: uuidParam, key: envKey, value: envValue.optional(), ...envFlags }),
      output: envSchema,
      annotations: UPDATE,
      http: { method: 'PATCH', path: base, status: 201 },
      async run({ db, caller }, { uuid, key, ...i }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        const e = await db
          .selectFrom('environment_variables')
          .selectAll()
          .where('resource_id', '=', r.id)
          .where('key', '=', key)
          .where('is_preview', '=', bit(i.is_preview))
          .executeTakeFirst();
        if (!e) throw notFound();
        const patch = { ...envFields(i), updated_at: nowIso() };
        await db.updateTable('environment_variables').set(patch).where('id', '=', e.id).execute();
        return envView({ ...e, ...patch });
      },
    }),
    defineOperation({
      name: `update_${singular}_envs_bulk`,
      summary: `Create or change several environment variables of a ${singular} at once, by key: all of them or, on any error, none.`,
      permission: 'write',
      toolset,
      input: z.strictObject({ uuid: uuidParam, data: z.array(z.strictObject({ key: envKey, value: envValue.optional(), ...envFlags })).min(1).max(500) }),
      output: z.array(envSchema),
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
              const row = { uuid: newUuid(), resource_id: r.id, key, value: null, is_preview: 0, is_literal: 0, is_multiline: 0, is_shown_once: 0, is_runtime: 1, is_buildtime: 1, comment: null, ...envFields(i), ...stamps() };
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
      summary: `Delete an environment variable of a ${singular} by its uuid.`,
      permission: 'write',
      toolset,
      input: z.strictObject({ uuid: uuidParam, env_uuid: uuidParam }),
      output: messageSchema,
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
  name: z.string(),
  mount_path: z.string(),
  /** berth: the compose service that mounts it (services only). */
  container: z.string().nullable(),
  /** berth: the engine volume name that holds the data. */
  volume_name: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});


async function storages(db: Db, resource: { id: number; uuid: string }) {
  const rows = await db.selectFrom('storages').selectAll().where('resource_id', '=', resource.id).orderBy('id').execute();
  return rows.map((s) => ({ uuid: s.uuid, name: s.name, mount_path: s.mount_path, container: s.container, volume_name: s.engine_volume ?? volumeName(resource.uuid, s.name), created_at: s.created_at, updated_at: s.updated_at }));
}

/** Persistent storages (named volumes) of one collection. Services derive theirs from compose. */
export function storageOperations(collection: Collection) {
  const singular = SINGULAR[collection];
  const kinds = KINDS_OF[collection];
  const toolset = TOOLSET_OF[collection];
  const base = `/api/v1/${collection}/{uuid}/storages`;
  const ops = [
    defineOperation({
      name: `list_${singular}_storages`,
      summary: `List the persistent volumes of a ${singular}.`,
      permission: 'read',
      toolset,
      input: z.strictObject({ uuid: uuidParam }),
      output: z.object({ persistent_storages: z.array(storageSchema), file_storages: z.array(z.never()) }),
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, { uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        return { persistent_storages: await storages(db, r), file_storages: [] };
      },
    }),
  ];
  if (collection === 'services') return ops;
  return [
    ...ops,
    defineOperation({
      name: `create_${singular}_storage`,
      summary: `Add a persistent volume to a ${singular}, mounted at mount_path; redeploy to apply.`,
      permission: 'write',
      toolset,
      input: z.strictObject({ uuid: uuidParam, type: z.literal('persistent', { error: 'Only persistent storages are supported.' }), name: engineName, mount_path: mountPath }),
      output: storageSchema,
      annotations: CREATE,
      http: { method: 'POST', path: base, status: 201 },
      async run({ db, caller }, { uuid, name, mount_path }) {
        // Checks and insert in one transaction: two racing mounts at one path cannot both land.
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const taken = await trx.selectFrom('storages').select(['name', 'mount_path']).where('resource_id', '=', r.id).execute();
          if (taken.some((s) => s.name === name)) throw validationError({ name: ['A storage with this name already exists.'] });
          if (taken.some((s) => s.mount_path === mount_path)) throw validationError({ mount_path: ['Another storage is mounted there.'] });
          const s = await trx.insertInto('storages').values({ uuid: newUuid(), resource_id: r.id, name, mount_path, container: null, engine_volume: null, ...stamps() }).returningAll().executeTakeFirstOrThrow();
          return { uuid: s.uuid, name, mount_path, container: null, volume_name: volumeName(r.uuid, name), created_at: s.created_at, updated_at: s.updated_at };
        });
      },
    }),
    defineOperation({
      name: `update_${singular}_storage`,
      summary: `Move a persistent volume of a ${singular} to another mount_path (storage_uuid in the body); redeploy to apply. The name stays: it names the engine volume that holds the data.`,
      permission: 'write',
      toolset,
      input: z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam, type: z.literal('persistent', { error: 'Only persistent storages are supported.' }).optional(), mount_path: mountPath }),
      output: storageSchema,
      annotations: UPDATE,
      http: { method: 'PATCH', path: base },
      async run({ db, caller }, { uuid, storage_uuid, mount_path }) {
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const all = await trx.selectFrom('storages').selectAll().where('resource_id', '=', r.id).execute();
          const s = all.find((x) => x.uuid === storage_uuid);
          if (!s) throw notFound();
          if (all.some((x) => x.id !== s.id && x.mount_path === mount_path)) throw validationError({ mount_path: ['Another storage is mounted there.'] });
          const updated_at = nowIso();
          await trx.updateTable('storages').set({ mount_path, updated_at }).where('id', '=', s.id).execute();
          return { uuid: s.uuid, name: s.name, mount_path, container: s.container, volume_name: s.engine_volume ?? volumeName(r.uuid, s.name), created_at: s.created_at, updated_at };
        });
      },
    }),
    defineOperation({
      name: `delete_${singular}_storage`,
      summary: `Remove a persistent volume from a ${singular}'s records (the engine volume is kept).`,
      permission: 'write',
      toolset,
      input: z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam }),
      output: messageSchema,
      annotations: DELETE,
      http: { method: 'DELETE', path: `${base}/{storage_uuid}` },
      async run({ db, caller }, { uuid, storage_uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        const d = await db.deleteFrom('storages').where('resource_id', '=', r.id).where('uuid', '=', storage_uuid).executeTakeFirst();
        if (d.numDeletedRows === 0n) throw notFound();
        return { message: 'Storage deleted.' };
      },
    }),
  ];
}

/** Container logs of a resource: sensitive, so the operation itself needs read:sensitive. */
export function logOperation(collection: Collection) {
  const singular = SINGULAR[collection];
  return defineOperation({
    name: `get_${singular}_logs`,
    default: true,
    summary: `Recent container logs of a ${singular} (read:sensitive).`,
    permission: 'read:sensitive',
    toolset: TOOLSET_OF[collection],
    input: z.strictObject({
      uuid: uuidParam,
      lines: z.coerce.number().int().min(1).max(10_000).default(100),
      full: z.enum(['true', 'false']).transform((v) => v === 'true').optional(),
    }),
    output: z.object({ logs: sensitive(z.string()), truncated: z.boolean() }),
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: true },
    http: { method: 'GET', path: `/api/v1/${collection}/{uuid}/logs` },
    async run({ db, caller, runtime }, { uuid, lines, full }) {
      const r = await ownedResource(db, uuid, caller.teamId, KINDS_OF[collection]);
      const t = truncateLog(await runtime.logs(r.id, { lines }), Boolean(full));
      return { logs: t.text, truncated: t.truncated };
    },
  });
}
