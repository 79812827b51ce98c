/**
 * Storages of a service's containers (Coolify's POST/PATCH/DELETE /services/{uuid}/storages).
 * A service is its compose file, so a storage added here is written into that file (a named
 * volume mounted by the chosen container, declared under the top-level `volumes:`) and is there
 * at the next deployment, for every door and for migrations alike. Volumes written in the compose
 * file by its author stay the author's: changing or removing them here is refused, as Coolify
 * refuses it for every service volume; storages added through the API can be moved or removed.
 */
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';
import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import { nowIso, type Db } from '../../store/db.js';
import { parseCompose, requireHostAccess } from '../compose.js';
import { notFound, validationError } from '../../errors.js';
import { ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { engineName, mountPath, uuidParam } from '../validators.js';
import { CREATE, DELETE, messageSchema, UPDATE } from './common.js';
import { config, serverOf } from './resource-common.js';
import { storageSchema } from './resource-parts.js';
import { volumeName } from '../model/volumes.js';
import type { ServiceConfig } from '../model/service.js';
import { partUuid } from './service-parts.js';
import { syncStorages } from './services.js';

const NOT_YET = (what: string) => `berth does not support ${what} on services yet.`;
const READ_ONLY = 'This storage is declared in the compose file: change docker_compose_raw to change it.';

/** Coolify's file-storage fields: refused by name, never dropped. */
const fileFields = {
  content: z.string().nullable().optional(),
  is_directory: z.boolean().optional(),
  is_host_file: z.boolean().optional(),
  fs_path: z.string().optional(),
};

type Trx = Db;
type Storage = Awaited<ReturnType<typeof storagesOf>>[number];

const storagesOf = (db: Trx, resourceId: number) => db.selectFrom('storages').selectAll().where('resource_id', '=', resourceId).orderBy('id').execute();

function refuseUnsupported(i: { type: string; host_path?: string | null; is_preview_suffix_enabled?: boolean } & Partial<Record<keyof typeof fileFields, unknown>>): void {
  const errors: Record<string, string[]> = {};
  if (i.type === 'file') errors.type = [NOT_YET('file storages') + ' Write the file into the image or mount a named volume.'];
  for (const f of Object.keys(fileFields)) if ((i as Record<string, unknown>)[f] !== undefined) errors[f] = [NOT_YET('file storages')];
  if (i.host_path !== undefined && i.host_path !== null) errors.host_path = [NOT_YET('host_path storages') + ' Write the bind mount in docker_compose_raw (it needs host access on the server).'];
  if (i.is_preview_suffix_enabled !== undefined) errors.is_preview_suffix_enabled = [NOT_YET('preview deployments')];
  if (Object.keys(errors).length) throw validationError(errors);
}

/** Writes the edited compose file back: re-parsed and host-checked like any compose the service gets. */
async function saveCompose(trx: Trx, r: Awaited<ReturnType<typeof ownedResource>>, c: ServiceConfig, yaml: string, apiStorages: string[]) {
  const compose = parseCompose(yaml);
  requireHostAccess(compose, (await serverOf(trx, r)).host_access === 1);
  const next: ServiceConfig & { api_storages?: string[] } = { ...c, docker_compose_raw: compose.yaml, containers: compose.containers, volumes: compose.volumes, api_storages: apiStorages };
  await trx
    .updateTable('resources')
    .set({ config: JSON.stringify(next), updated_at: nowIso() })
    .where('id', '=', r.id)
    .execute();
  await syncStorages(trx, r.id, compose.containers);
}

/** Index of the short-form entry `name:path[:mode]` in a compose service's volumes. */
function mountIndex(items: unknown[], name: string, path: string): number {
  return items.findIndex((it) => {
    const v = isScalar(it) ? String(it.value) : String(it);
    const [src, target] = v.split(':');
    return src === name && target === path;
  });
}

const view = (serviceUuid: string, s: Storage) => ({
  uuid: s.uuid,
  id: s.id,
  name: s.name,
  mount_path: s.mount_path,
  container: s.container,
  volume_name: s.engine_volume ?? volumeName(serviceUuid, s.name),
  created_at: s.created_at,
  updated_at: s.updated_at,
});

/** The storage named by uuid or id (Coolify accepts either) among the service's. */
function findStorage(all: Storage[], ref: { storage_uuid?: string; id?: number }): Storage {
  if (ref.storage_uuid === undefined && ref.id === undefined) throw validationError({ uuid: ['Either uuid or id is required.'] });
  const s = all.find((x) => (ref.storage_uuid !== undefined ? x.uuid === ref.storage_uuid : x.id === ref.id));
  if (!s) throw notFound();
  return s;
}

export const serviceStorageOperations = [
  defineOperation({
    name: 'create_service_storage',
    title: 'Add a service volume',
    description:
      'Add a named volume to one container of a service (resource_uuid from list_service_applications or list_service_databases) at mount_path; written into the compose file, mounted at the next deploy.',
    summary:
      "Add a named volume to one container of a service (resource_uuid: a uuid from the service's applications or databases), mounted at mount_path; written into the compose file, applied at the next deploy.",
    permission: 'write',
    toolset: 'services',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        type: z.enum(['persistent', 'file']),
        resource_uuid: uuidParam,
        name: engineName.optional(),
        mount_path: mountPath,
        host_path: z.string().nullable().optional(),
        ...fileFields,
      }),
    output: () => storageSchema,
    annotations: CREATE,
    storeOnly: true,
    http: { method: 'POST', path: '/api/v1/services/{uuid}/storages', status: 201 },
    async run({ db, caller }, i) {
      refuseUnsupported(i);
      if (!i.name) throw validationError({ name: ['The name field is required for persistent storages.'] });
      const name = i.name;
      return atomically(db, async (trx) => {
        const r = await ownedResource(trx, i.uuid, caller.teamId, ['service']);
        const c = config<ServiceConfig & { api_storages?: string[] }>(r);
        const container = c.containers.find((k) => partUuid(r.uuid, k.name) === i.resource_uuid);
        if (!container) throw notFound();
        if (c.volumes.includes(name)) throw validationError({ name: ['A storage with this name already exists.'] });
        if ([...container.mounts, ...container.binds].some((m) => m.target.replace(/\/+$/, '') === i.mount_path.replace(/\/+$/, ''))) {
          throw validationError({ mount_path: ['Another storage is mounted there.'] });
        }
        const doc = parseDocument(c.docker_compose_raw);
        const mounts = doc.getIn(['services', container.name, 'volumes']);
        if (isSeq(mounts)) mounts.add(doc.createNode(`${name}:${i.mount_path}`));
        else doc.setIn(['services', container.name, 'volumes'], doc.createNode([`${name}:${i.mount_path}`]));
        if (!isMap(doc.get('volumes'))) doc.set('volumes', doc.createNode({}));
        doc.setIn(['volumes', name], doc.createNode({}));
        await saveCompose(trx, r, c, doc.toString(), [...(c.api_storages ?? []), name]);
        const s = (await storagesOf(trx, r.id)).find((x) => x.name === name)!;
        return view(r.uuid, s);
      });
    },
  }),
  defineOperation({
    name: 'update_service_storage',
    title: 'Move a service volume',
    description: 'Mount a volume added with create_service_storage (storage_uuid) at another mount_path; its data stays. Volumes written in the compose file are changed there (update_service).',
    summary:
      "Move a storage that was added to a service through the API to another mount_path (name it by storage_uuid, or Coolify's body uuid or id); applied at the next deploy. Volumes written in the compose file are changed there.",
    permission: 'write',
    toolset: 'services',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        storage_uuid: uuidParam.optional(),
        id: z.number().int().positive().optional(),
        type: z.enum(['persistent', 'file']),
        name: engineName.optional(),
        mount_path: mountPath.optional(),
        host_path: z.string().nullable().optional(),
        is_preview_suffix_enabled: z.boolean().optional(),
        content: fileFields.content,
      }),
    output: () => storageSchema,
    annotations: UPDATE,
    storeOnly: true,
    http: { method: 'PATCH', path: '/api/v1/services/{uuid}/storages', bodyNames: { uuid: 'storage_uuid' } },
    async run({ db, caller }, i) {
      refuseUnsupported(i);
      return atomically(db, async (trx) => {
        const r = await ownedResource(trx, i.uuid, caller.teamId, ['service']);
        const c = config<ServiceConfig & { api_storages?: string[] }>(r);
        const s = findStorage(await storagesOf(trx, r.id), i);
        const changes = (['name', 'mount_path'] as const).filter((f) => i[f] !== undefined && i[f] !== s[f]);
        if (changes.length === 0) return view(r.uuid, s);
        if (!(c.api_storages ?? []).includes(s.name)) throw validationError(Object.fromEntries(changes.map((f) => [f, [READ_ONLY]])));
        if (i.name !== undefined && i.name !== s.name) throw validationError({ name: ['The name names the engine volume that holds the data; it cannot change.'] });
        const container = c.containers.find((k) => k.name === s.container)!;
        const target = i.mount_path!;
        if ([...container.mounts.filter((m) => m.volume !== s.name), ...container.binds].some((m) => m.target.replace(/\/+$/, '') === target.replace(/\/+$/, ''))) {
          throw validationError({ mount_path: ['Another storage is mounted there.'] });
        }
        const doc = parseDocument(c.docker_compose_raw);
        const mounts = doc.getIn(['services', container.name, 'volumes']);
        const at = isSeq(mounts) ? mountIndex(mounts.items, s.name, s.mount_path) : -1;
        if (!isSeq(mounts) || at < 0) throw validationError({ mount_path: [READ_ONLY] });
        mounts.set(at, doc.createNode(`${s.name}:${target}`));
        await saveCompose(trx, r, c, doc.toString(), c.api_storages ?? []);
        return view(r.uuid, (await storagesOf(trx, r.id)).find((x) => x.name === s.name)!);
      });
    },
  }),
  defineOperation({
    name: 'delete_service_storage',
    title: 'Remove a service volume',
    description: "Remove a volume added with create_service_storage from the service's compose file; the engine volume and its data stay.",
    summary: 'Remove a storage that was added to a service through the API from its compose file (the engine volume and its data are kept). Volumes written in the compose file are removed there.',
    permission: 'write',
    toolset: 'services',
    input: () => z.strictObject({ uuid: uuidParam, storage_uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    storeOnly: true,
    http: { method: 'DELETE', path: '/api/v1/services/{uuid}/storages/{storage_uuid}' },
    async run({ db, caller }, i) {
      return atomically(db, async (trx) => {
        const r = await ownedResource(trx, i.uuid, caller.teamId, ['service']);
        const c = config<ServiceConfig & { api_storages?: string[] }>(r);
        const s = findStorage(await storagesOf(trx, r.id), i);
        if (!(c.api_storages ?? []).includes(s.name)) throw validationError({ storage_uuid: [READ_ONLY] });
        const backup = await trx.selectFrom('scheduled_volume_backups').select('id').where('storage_id', '=', s.id).executeTakeFirst();
        if (backup) throw validationError({ storage_uuid: ['This storage has a backup schedule: delete the schedule first.'] });
        const doc = parseDocument(c.docker_compose_raw);
        const mounts = doc.getIn(['services', s.container!, 'volumes']);
        const at = isSeq(mounts) ? mountIndex(mounts.items, s.name, s.mount_path) : -1;
        if (!isSeq(mounts) || at < 0) throw validationError({ storage_uuid: [READ_ONLY] });
        mounts.delete(at);
        if (mounts.items.length === 0) doc.deleteIn(['services', s.container!, 'volumes']);
        doc.deleteIn(['volumes', s.name]);
        await saveCompose(
          trx,
          r,
          c,
          doc.toString(),
          (c.api_storages ?? []).filter((n) => n !== s.name),
        );
        return { message: 'Storage deleted.' };
      });
    },
  }),
];
