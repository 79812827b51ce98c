/**
 * Tags as Coolify's: records with uuids (lower case, unique in the team) and tags on
 * applications, databases and services. A name used at create time has a record; renaming or
 * deleting a record changes every resource carrying it; deploy by tag follows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_FOUND, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const names = (list: Array<{ name: string }>) => list.map((t) => t.name);

describe('tags', () => {
  it('a name given at create time is a tag record; create normalizes and refuses a taken name with 409', async () => {
    expect(names((await c.api('GET', '/tags', c.read)).json)).toContain('web');
    const made = await c.api('POST', '/tags', c.write, { name: '  Staging ' });
    expect(made.status).toBe(201);
    expect(made.json).toMatchObject({ uuid: expect.any(String), name: 'staging' });
    const dup = await c.api('POST', '/tags', c.write, { name: 'STAGING' });
    expect(dup.status).toBe(409);
    expect(dup.json.message).toBe('Tag with this name already exists.');
    for (const name of ['x', 'has space', 'a'.repeat(65)]) expect((await c.api('POST', '/tags', c.write, { name })).status).toBe(422);
  });

  it('tags on a resource: add by name (new names become tags), list, remove; deploy by tag follows a rename', async () => {
    const base = `/databases/${c.w.databaseUuid}/tags`;
    const add = await c.api('POST', base, c.write, { tag_names: ['Nightly', 'staging'] });
    expect(add.status).toBe(201);
    expect(names(add.json)).toEqual(['nightly', 'staging']);
    expect((await c.api('POST', base, c.write, { tag_name: 'a1', tag_names: ['b1'] })).status).toBe(422);
    expect((await c.api('POST', base, c.write, {})).status).toBe(422);

    const nightly = add.json.find((t: { name: string }) => t.name === 'nightly');
    const renamed = await c.api('PATCH', `/tags/${nightly.uuid}`, c.write, { name: 'every-night' });
    expect(renamed.json).toMatchObject({ uuid: nightly.uuid, name: 'every-night' });
    expect(names((await c.api('GET', base, c.read)).json)).toEqual(['every-night', 'staging']);
    expect((await c.api('GET', `/databases/${c.w.databaseUuid}`, c.read)).json.tags).toContain('every-night');
    const deploy = await c.api('POST', '/deploy?tag=every-night', c.deploy);
    expect(deploy.status).toBe(200);
    expect(deploy.json.deployments.map((d: { resource_uuid: string }) => d.resource_uuid)).toEqual([c.w.databaseUuid]);

    const staging = add.json.find((t: { name: string }) => t.name === 'staging');
    expect((await c.api('DELETE', `${base}/${staging.uuid}`, c.write)).json).toEqual({ message: 'Tag removed.' });
    expect(names((await c.api('GET', base, c.read)).json)).toEqual(['every-night']);
    // Not on the resource any more: as missing as a tag that never was.
    expect((await c.api('DELETE', `${base}/${staging.uuid}`, c.write)).text).toBe(NOT_FOUND);
  });

  it('deleting a tag takes it off every resource; another team sees none of it', async () => {
    const t = (await c.api('POST', '/tags', c.write, { name: 'doomed' })).json;
    await c.api('POST', `/applications/${c.w.appUuid}/tags`, c.write, { tag_name: 'doomed' });
    await c.api('POST', `/services/${c.w.serviceUuid}/tags`, c.write, { tag_name: 'doomed' });
    const other = await c.s.team('tags-neighbour');
    expect((await c.api('GET', '/tags', other.rootToken)).json).toEqual([]);
    for (const [m, p] of [
      ['PATCH', `/tags/${t.uuid}`],
      ['DELETE', `/tags/${t.uuid}`],
      ['GET', `/applications/${c.w.appUuid}/tags`],
    ] as const) {
      const r = await c.api(m, p, other.rootToken, m === 'PATCH' ? { name: 'mine' } : undefined);
      expect(r.text, `${m} ${p}`).toBe(NOT_FOUND);
    }
    expect((await c.api('DELETE', `/tags/${t.uuid}`, c.write)).json).toEqual({ message: 'Tag deleted.' });
    expect((await c.api('GET', `/applications/${c.w.appUuid}`, c.read)).json.tags).not.toContain('doomed');
    expect((await c.api('GET', `/services/${c.w.serviceUuid}`, c.read)).json.tags).not.toContain('doomed');
    expect((await c.api('POST', '/tags', c.read, { name: 'nope' })).status).toBe(403);
  });
});

describe('move', () => {
  it('moves a resource to another environment of the team, records only; the same one again is a 409', async () => {
    const staging = c.w.stagingUuid;
    const r = await c.api('POST', `/services/${c.w.serviceUuid}/move`, c.write, { environment_uuid: staging });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ message: 'Service moved successfully.', uuid: c.w.serviceUuid, project_uuid: c.w.projectUuid, environment_uuid: staging });
    expect((await c.api('GET', `/services/${c.w.serviceUuid}`, c.read)).json).toMatchObject({ environment_uuid: staging, server_uuid: c.w.serverUuid });
    const again = await c.api('POST', `/services/${c.w.serviceUuid}/move`, c.write, { environment_uuid: staging });
    expect(again.status).toBe(409);
    expect(again.json.message).toBe('Service is already in this environment.');
    const other = await c.s.team('move-neighbour');
    const theirs = (await c.api('POST', '/projects', other.rootToken, { name: 'theirs' })).json.uuid;
    const theirEnv = (await c.api('GET', `/projects/${theirs}/environments`, other.rootToken)).json[0].uuid;
    expect((await c.api('POST', `/services/${c.w.serviceUuid}/move`, c.write, { environment_uuid: theirEnv })).text).toBe(NOT_FOUND);
    expect((await c.api('POST', `/services/${c.w.serviceUuid}/move`, other.rootToken, { environment_uuid: theirEnv })).text).toBe(NOT_FOUND);
  });
});

describe('clone', () => {
  it('copies settings, variables, volumes (new engine volumes) and tags onto a destination; not deployed', async () => {
    const r = await c.api('POST', `/applications/${c.w.appUuid}/clone`, c.write, { destination_uuid: c.w.destination2Uuid, name: 'web copy' });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ uuid: expect.any(String), message: 'Application cloned.' });
    const [src, copy] = await Promise.all([c.api('GET', `/applications/${c.w.appUuid}`, c.read), c.api('GET', `/applications/${r.json.uuid}`, c.read)]);
    expect(copy.json).toMatchObject({
      name: 'web copy',
      status: 'exited',
      server_uuid: c.w.server2Uuid,
      environment_uuid: src.json.environment_uuid,
      docker_registry_image_name: src.json.docker_registry_image_name,
      tags: src.json.tags,
    });
    const keys = async (uuid: string) => (await c.api('GET', `/applications/${uuid}/envs`, c.sensitive)).json.map((e: { key: string; value: string }) => `${e.key}=${e.value}`).sort();
    expect(await keys(r.json.uuid)).toEqual(await keys(c.w.appUuid));
    const volumes = async (uuid: string) =>
      (await c.api('GET', `/applications/${uuid}/storages`, c.read)).json.persistent_storages.map((s: { name: string; volume_name: string }) => [s.name, s.volume_name]);
    const [a, b] = [await volumes(c.w.appUuid), await volumes(r.json.uuid)];
    expect(b.map((x: string[]) => x[0])).toEqual(a.map((x: string[]) => x[0]));
    for (const [, v] of b) expect(a.map((x: string[]) => x[1])).not.toContain(v);
  });

  it("another team's destination or resource is the same 404 as a missing one; copying data is refused, nothing is made", async () => {
    const before = (await c.api('GET', '/applications', c.read)).json.length;
    const other = await c.s.team('clone-neighbour');
    const theirServer = (await c.api('POST', '/servers', other.rootToken, { ip: '10.7.7.7' })).json.uuid;
    const theirDest = (await c.api('GET', `/servers/${theirServer}/destinations`, other.rootToken)).json[0].uuid;
    expect((await c.api('POST', `/applications/${c.w.appUuid}/clone`, c.write, { destination_uuid: theirDest })).text).toBe(NOT_FOUND);
    expect((await c.api('POST', `/applications/${c.w.appUuid}/clone`, other.rootToken, { destination_uuid: theirDest })).text).toBe(NOT_FOUND);
    expect((await c.api('POST', `/applications/${c.w.appUuid}/clone`, c.write, { destination_uuid: c.w.destinationUuid, clone_volumes: true })).status).toBe(422);
    expect((await c.api('GET', '/applications', c.read)).json.length).toBe(before);
  });
});
