import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPOSE } from '../helpers/world.js';
import { b64, dump, expectValidation, finished, markManaged, NOT_FOUND, placeOf, settle, setup, type Ctx } from './support.js';

let c: Ctx;
let foreignDestination: string;
beforeAll(async () => {
  c = await setup();
  // Another team with a server of its own: its destination is not ours to migrate to.
  const other = await c.s.team('Migration Neighbours');
  const server = (await c.api('POST', '/servers', other.rootToken, { ip: '10.60.0.1' })).json.uuid;
  foreignDestination = (await c.api('GET', `/servers/${server}/destinations`, other.rootToken)).json[0].uuid;
});
afterAll(() => c.stop());

type Collection = 'applications' | 'databases' | 'services';

/**
 * A fresh resource of a collection on the world's first server, with a start asked for. The
 * world's servers are record-only, so nothing runs and it stays `exited` (test/e2e migrates
 * running resources on real engines).
 */
async function placedResource(collection: Collection): Promise<string> {
  const place = { ...placeOf(c.w), destination_uuid: c.w.destinationUuid };
  const created =
    collection === 'applications'
      ? await c.api('POST', '/applications/dockerimage', c.write, { ...place, docker_registry_image_name: 'nginx' })
      : collection === 'databases'
        ? await c.api('POST', '/databases/postgresql', c.write, place)
        : await c.api('POST', '/services', c.write, { ...place, docker_compose_raw: b64(COMPOSE) });
  expect(created.status, created.text).toBe(201);
  const uuid = created.json.uuid as string;
  if (collection === 'applications') await c.api('POST', `/applications/${uuid}/storages`, c.write, { type: 'persistent', name: 'data', mount_path: '/data' });
  const start = await c.api('POST', `/${collection}/${uuid}/start`, c.deploy);
  expect(await finished(c, start.json.deployment_uuid)).toMatchObject({ status: 'failed' });
  expect((await c.api('GET', `/${collection}/${uuid}`, c.read)).json.status).toBe('exited');
  return uuid;
}

const deploymentCount = async (uuid: string) => {
  const r = await c.s.db.selectFrom('resources').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow();
  return (await c.s.db.selectFrom('deployments').select('id').where('resource_id', '=', r.id).execute()).length;
};

describe.each(['applications', 'databases', 'services'] as const)('POST /%s/{uuid}/migrate', (collection) => {
  const singular = { applications: 'Application', databases: 'Database', services: 'Service' }[collection];

  it('stops the resource, moves its records, does not redeploy; 200 with the migration', async () => {
    const uuid = await placedResource(collection);
    const deploymentsBefore = await deploymentCount(uuid);
    const r = await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destination2Uuid });
    expect(r.status, r.text).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.json).toMatchObject({
      uuid,
      destination_uuid: c.w.destination2Uuid,
      migrate_volumes: true, // the default
      moves_data: false,
      migration_uuid: expect.stringMatching(/^[a-z0-9]{24}$/),
    });
    // Neither server has a validated engine: the message says why no data moves, and to redeploy.
    expect(r.json.message).toMatch(new RegExp(`^${singular} stopped and moved`));
    expect(r.json.message).toMatch(/not managed/);
    expect(r.json.message).toMatch(/Redeploy/);

    const got = (await c.api('GET', `/${collection}/${uuid}`, c.read)).json;
    expect(got).toMatchObject({ status: 'exited', destination_uuid: c.w.destination2Uuid, server_uuid: c.w.server2Uuid });
    await settle(c.s);
    expect(await deploymentCount(uuid)).toBe(deploymentsBefore);
    expect((await c.api('GET', `/${collection}/${uuid}`, c.read)).json.status).toBe('exited');

    const m = await c.api('GET', `/migrations/${r.json.migration_uuid}`, c.read);
    expect(m.status).toBe(200);
    expect(m.json).toMatchObject({
      migration_uuid: r.json.migration_uuid,
      resource_uuid: uuid,
      from_destination_uuid: c.w.destinationUuid,
      destination_uuid: c.w.destination2Uuid,
      migrate_volumes: true,
      moves_data: false,
    });
    const list = await c.api('GET', '/migrations', c.read);
    expect(list.json[0].migration_uuid).toBe(r.json.migration_uuid); // newest first
    // Where it lives now, for every view.
    const onServer2 = (await c.api('GET', `/servers/${c.w.server2Uuid}/resources`, c.read)).json.map((x: { uuid: string }) => x.uuid);
    expect(onServer2).toContain(uuid);
    const onServer1 = (await c.api('GET', `/servers/${c.w.serverUuid}/resources`, c.read)).json.map((x: { uuid: string }) => x.uuid);
    expect(onServer1).not.toContain(uuid);
  });

  it('start_on_destination: true → a start queued where it moved, and the migration says how it went; false by default', async () => {
    const uuid = await placedResource(collection);
    const r = await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destination2Uuid, start_on_destination: true });
    expect(r.status, r.text).toBe(200);
    // The target is record-only too: the start ran and failed (no engine), and the answer says so.
    expect(r.json).toMatchObject({ moves_data: false, status: 'finished', started_on_destination: false });
    expect(r.json.message).toMatch(
      new RegExp(`^${singular} stopped and moved to the new destination\\. .*Moved, but starting it on the destination failed \\(deployment ${r.json.start_deployment_uuid}; `),
    );
    expect((await c.api('GET', `/${collection}/${uuid}`, c.read)).json).toMatchObject({ status: 'exited', destination_uuid: c.w.destination2Uuid });
    expect((await c.api('GET', `/migrations/${r.json.migration_uuid}`, c.read)).json).toMatchObject({
      start_on_destination: true,
      error: expect.stringMatching(/^Moved, but starting it on the destination failed/),
      start_deployment_uuid: r.json.start_deployment_uuid,
    });
    // Started by a deployment on the target's queue, like start_*: recorded, ended, on server 2.
    const dep = await c.api('GET', `/deployments/${r.json.start_deployment_uuid}`, c.read);
    expect(dep.json).toMatchObject({ kind: 'start', status: 'failed', resource_uuid: uuid, server_uuid: c.w.server2Uuid });
    const back = await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destinationUuid });
    expect(back.json).not.toHaveProperty('started_on_destination');
    expect(back.json).not.toHaveProperty('start_deployment_uuid');
    expect((await c.api('GET', `/migrations/${back.json.migration_uuid}`, c.read)).json).toMatchObject({ start_on_destination: false, start_deployment_uuid: null });
    expectValidation(await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destination2Uuid, start_on_destination: 'yes' }), ['start_on_destination']);
  });

  it('migrate_volumes false → moves_data false, and the message says so', async () => {
    const uuid = await placedResource(collection);
    const r = await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destination2Uuid, migrate_volumes: false });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ migrate_volumes: false, moves_data: false });
    expect(r.json.message).toMatch(/migrate_volumes is false/);
    expect((await c.api('GET', `/migrations/${r.json.migration_uuid}`, c.read)).json).toMatchObject({ migrate_volumes: false, moves_data: false });
  });

  it('the current destination → 422; a missing or another team’s destination → 404; nothing changes', async () => {
    const uuid = await placedResource(collection);
    const before = await dump(c.s);
    const same = await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destinationUuid });
    expectValidation(same, ['destination_uuid']);
    for (const destination_uuid of ['doesnotexist000000000000', foreignDestination]) {
      const r = await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid });
      expect(r.status).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    expect(await dump(c.s)).toEqual(before);
    expect((await c.api('GET', `/${collection}/${uuid}`, c.read)).json.status).toBe('exited');
  });

  it('body rules: destination_uuid required, booleans only, no unknown fields', async () => {
    const uuid = await placedResource(collection);
    const before = await dump(c.s);
    expectValidation(await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, {}), ['destination_uuid']);
    expectValidation(await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destination2Uuid, migrate_volumes: 'yes' }), ['migrate_volumes']);
    expectValidation(await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destination2Uuid, server_uuid: c.w.server2Uuid }), ['server_uuid']);
    expectValidation(await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: '../x' }), ['destination_uuid']);
    expectValidation(await c.api('POST', `/${collection}/${uuid}/migrate`, c.write, { destination_uuid: c.w.destination2Uuid, uuid: 'other' }), ['uuid']);
    expect(await dump(c.s)).toEqual(before);
  });

  it('needs write (deploy or read alone → 403); another team’s resource → 404', async () => {
    const uuid = await placedResource(collection);
    for (const t of [c.deploy, c.read]) {
      const r = await c.api('POST', `/${collection}/${uuid}/migrate`, t, { destination_uuid: c.w.destination2Uuid });
      expect(r.status).toBe(403);
      expect(r.json.missing_permissions).toEqual(['write']);
    }
    const other = await c.s.team(`Movers ${collection}`);
    const r = await c.api('POST', `/${collection}/${uuid}/migrate`, other.rootToken, { destination_uuid: c.w.destination2Uuid });
    expect(r.status).toBe(404);
    expect(r.text).toBe(NOT_FOUND);
  });
});

describe('migrate: where volume data moves', () => {
  it('to another destination on the same server: records move, no data moves', async () => {
    const { uuid: dest } = (await c.api('POST', `/servers/${c.w.serverUuid}/destinations`, c.write, { network: 'same-host' })).json;
    const uuid = await placedResource('applications');
    const r = await c.api('POST', `/applications/${uuid}/migrate`, c.write, { destination_uuid: dest });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ moves_data: false, destination_uuid: dest });
    expect(r.json.message).toMatch(/same server/);
    expect((await c.api('GET', `/applications/${uuid}`, c.read)).json).toMatchObject({ destination_uuid: dest, server_uuid: c.w.serverUuid, status: 'exited' });
  });

  it('between two managed servers with migrate_volumes: moves_data true, and the transfer is a job of its own', async () => {
    const uuid = await placedResource('databases');
    const a = (await c.api('POST', '/servers', c.write, { ip: '10.70.0.1' })).json.uuid;
    const b = (await c.api('POST', '/servers', c.write, { ip: '10.70.0.2' })).json.uuid;
    const destA = (await c.api('GET', `/servers/${a}/destinations`, c.read)).json[0].uuid;
    const destB = (await c.api('GET', `/servers/${b}/destinations`, c.read)).json[0].uuid;
    // Onto server A while neither is managed (records only), then mark both managed.
    expect((await c.api('POST', `/databases/${uuid}/migrate`, c.write, { destination_uuid: destA })).json.moves_data).toBe(false);
    await markManaged(c.s, a);
    await markManaged(c.s, b);
    expect((await c.api('GET', `/servers/${a}`, c.read)).json.is_managed).toBe(true);

    const deploymentsBefore = await deploymentCount(uuid);
    const r = await c.api('POST', `/databases/${uuid}/migrate`, c.write, { destination_uuid: destB });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ uuid, destination_uuid: destB, migrate_volumes: true, moves_data: true, migration_uuid: expect.stringMatching(/^[a-z0-9]{24}$/), status: 'pending' });
    expect(r.json.message).toMatch(/volume/);
    const m = (await c.api('GET', `/migrations/${r.json.migration_uuid}`, c.read)).json;
    expect(m).toMatchObject({ migration_uuid: r.json.migration_uuid, resource_uuid: uuid, from_destination_uuid: destA, destination_uuid: destB, migrate_volumes: true, moves_data: true });
    // These engines are not real, so the copy can never complete; the request did not wait for it.
    expect(m.status).not.toBe('finished');
    expect(await deploymentCount(uuid)).toBe(deploymentsBefore);
  });

  it('from an unmanaged server to a managed one: no data moves, and the message says why', async () => {
    const uuid = await placedResource('services');
    const m = (await c.api('POST', '/servers', c.write, { ip: '10.71.0.1' })).json.uuid;
    const destM = (await c.api('GET', `/servers/${m}/destinations`, c.read)).json[0].uuid;
    await markManaged(c.s, m);
    const r = await c.api('POST', `/services/${uuid}/migrate`, c.write, { destination_uuid: destM });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ moves_data: false, migrate_volumes: true });
    expect(r.json.message).toMatch(/not managed/);
    expect((await c.api('GET', `/services/${uuid}`, c.read)).json).toMatchObject({ destination_uuid: destM, server_uuid: m, status: 'exited' });
  });
});
