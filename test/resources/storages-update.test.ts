/**
 * PATCH /{applications,databases}/{uuid}/storages: a persistent volume moves to another mount
 * path; its name and engine volume (the data) stay; a path another storage uses is refused; a
 * storage of another resource or team is a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

describe.each([
  ['applications', () => ({ uuid: c.w.appUuid, storage: c.w.appStorageUuid })],
  ['databases', () => ({ uuid: c.w.databaseUuid, storage: c.w.databaseStorageUuid })],
] as const)('%s storages PATCH', (collection, ids) => {
  const list = async (uuid: string) =>
    (await c.api('GET', `/${collection}/${uuid}/storages`, c.read)).json.persistent_storages as Array<{ uuid: string; name: string; mount_path: string; volume_name: string }>;

  it('moves the mount path and keeps the name and the engine volume', async () => {
    const { uuid, storage } = ids();
    const before = (await list(uuid)).find((s) => s.uuid === storage)!;
    const r = await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { storage_uuid: storage, mount_path: '/srv/moved' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ uuid: storage, name: before.name, mount_path: '/srv/moved', volume_name: before.volume_name });
    expect((await list(uuid)).find((s) => s.uuid === storage)).toMatchObject({ mount_path: '/srv/moved', volume_name: before.volume_name });
  });

  it('names the storage as Coolify clients do: body uuid, or id', async () => {
    const { uuid, storage } = ids();
    const one = (await list(uuid)).find((s) => s.uuid === storage)! as { id?: number; volume_name: string };
    expect((await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { uuid: storage, type: 'persistent', mount_path: '/srv/by-uuid' })).json).toMatchObject({
      uuid: storage,
      mount_path: '/srv/by-uuid',
    });
    expect(one.id).toEqual(expect.any(Number));
    expect((await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { id: one.id, type: 'persistent', mount_path: '/srv/by-id' })).json).toMatchObject({
      uuid: storage,
      mount_path: '/srv/by-id',
      volume_name: one.volume_name,
    });
    const renamed = await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { uuid: storage, type: 'persistent', name: 'renamed' });
    expect(renamed.json.errors.name[0]).toMatch(/^berth does not support this Coolify field yet/);
  });

  it('refuses a taken or unsafe path and a foreign storage, changing nothing', async () => {
    const { uuid, storage } = ids();
    const other = await c.api('POST', `/${collection}/${uuid}/storages`, c.write, { type: 'persistent', name: 'second', mount_path: '/srv/second' });
    expect(other.status).toBe(201);
    const before = await list(uuid);
    const taken = await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { storage_uuid: storage, mount_path: '/srv/second' });
    expect(taken.status).toBe(422);
    expect(taken.json.errors).toEqual({ mount_path: ['Another storage is mounted there.'] });
    expect((await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { storage_uuid: storage, mount_path: '../etc' })).status).toBe(422);
    expect((await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { storage_uuid: storage, mount_path: '/x', name: 'renamed' })).status).toBe(422);
    const team = await c.s.team(`Storages ${collection}`);
    const foreign = await c.api('PATCH', `/${collection}/${uuid}/storages`, team.rootToken, { storage_uuid: storage, mount_path: '/srv/theirs' });
    const missing = await c.api('PATCH', `/${collection}/${uuid}/storages`, c.write, { storage_uuid: 'nosuchstorage', mount_path: '/srv/none' });
    expect(foreign.status).toBe(404);
    expect(missing.json).toEqual(foreign.json);
    expect(await list(uuid)).toEqual(before);
  });
});
