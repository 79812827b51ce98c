/**
 * Additional destinations (Coolify's /applications/{uuid}/destinations) end to end on the two real
 * engines: one application on two servers. A deploy runs it on both (the copy's deployment on
 * engine b's queue after the primary's), its status counts two copies, stop and start reach both,
 * removing the destination removes the copy from b only, and deleting the application removes every
 * copy. Ground truth is read from the engines with the podman API, not from berth. Then what the
 * add refuses: the primary, its server, a second destination on one server, another team's
 * destination (the same 404 as a missing one), and a built application's image carried to b.
 * Between deployments, b's engine watcher keeps the copy's status (and the count) as b's engine says.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, containerState, deployed, ensureSleeperImage, registerEngines, SLEEPER_IMAGE, until, volumeExists, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)('an application on two servers (additional destinations)', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ helperImage: ENGINE_IMAGE, apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  async function app(name: string): Promise<string> {
    const [repo, tag] = SLEEPER_IMAGE.split(':');
    const { uuid } = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name,
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
    });
    return uuid;
  }

  /** The deployments of the application on a server, newest first. */
  async function deploymentsOn(uuid: string, server: string): Promise<any[]> {
    return (await api.ok('GET', `/deployments/applications/${uuid}?take=100`)).deployments.filter((d: any) => d.server_uuid === server);
  }

  /** Waits for the n-th deployment of the application on engine b to end, finished. */
  async function copyDeployed(uuid: string, n: number): Promise<any> {
    const d = await until(`deployment ${n} on b`, async () => ((await deploymentsOn(uuid, p.serverB)).length >= n ? (await deploymentsOn(uuid, p.serverB))[0] : undefined), 30_000);
    return deployed(api, d.deployment_uuid, 30_000);
  }

  it('deploys on both engines, counts both, stops and starts both, removes one copy, and delete removes every copy', async () => {
    const uuid = await app('two-servers');
    await api.ok('POST', `/applications/${uuid}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
    const added = await api.req('POST', `/applications/${uuid}/destinations`, { destination_uuid: p.destB });
    expect(added.status, added.text).toBe(201);
    expect(added.json).toEqual({ message: 'Destination attached.', uuid: p.destB });
    const list = await api.ok('GET', `/applications/${uuid}/destinations`);
    expect(list.map((d: any) => [d.uuid, d.server_uuid, d.is_primary])).toEqual([
      [p.destA, p.serverA, true],
      [p.destB, p.serverB, false],
    ]);

    // Deploy: the primary on a, then the copy on b through b's queue.
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid);
    const copy = await copyDeployed(uuid, 1);
    expect(copy.kind).toBe('deploy');
    expect(containerState(engines, 'a', uuid)).toMatchObject({ running: true });
    expect(containerState(engines, 'b', uuid)).toMatchObject({ running: true });
    expect(volumeExists(engines, 'b', `${uuid}-data`)).toBe(true);
    const view = await until(
      'both copies running',
      async () => {
        const v = await api.ok('GET', `/applications/${uuid}`);
        return v.running_copies === 2 ? v : undefined;
      },
      10_000,
    );
    expect(view.additional_destinations).toEqual([{ uuid: p.destB, server_uuid: p.serverB, status: 'running:unknown' }]);

    // Stop reaches both; start brings both back.
    await until('stopped', async () => ((await api.req('POST', `/applications/${uuid}/stop`)).status < 300 ? true : undefined), 30_000);
    await copyDeployed(uuid, 2);
    expect(containerState(engines, 'a', uuid)).toMatchObject({ running: false });
    expect(containerState(engines, 'b', uuid)).toMatchObject({ running: false });
    expect((await api.ok('GET', `/applications/${uuid}`)).running_copies).toBe(0);
    await api.ok('POST', `/applications/${uuid}/start`);
    await copyDeployed(uuid, 3);
    expect(containerState(engines, 'b', uuid)).toMatchObject({ running: true });

    // Removing the destination removes the copy from b (its volume too, when asked) and nothing on a.
    const removed = await api.ok('DELETE', `/applications/${uuid}/destinations/${p.destB}?delete_volumes=true`);
    expect(removed.message).toBe('Destination detached.');
    expect(removed.removed).toContain(`removed container ${uuid}`);
    expect(containerState(engines, 'b', uuid)).toBeNull();
    expect(volumeExists(engines, 'b', `${uuid}-data`)).toBe(false);
    expect(containerState(engines, 'a', uuid)).toMatchObject({ running: true });
    expect((await api.ok('GET', `/applications/${uuid}/destinations`)).length).toBe(1);
    expect((await api.req('DELETE', `/applications/${uuid}/destinations/${p.destB}`)).status).toBe(404);

    // Attached again and deployed: delete removes both copies and their volumes.
    await api.ok('POST', `/applications/${uuid}/destinations`, { destination_uuid: p.destB });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid);
    await copyDeployed(uuid, 4);
    expect(containerState(engines, 'b', uuid)).toMatchObject({ running: true });
    const del = await api.req('DELETE', `/applications/${uuid}`);
    expect(del.status, del.text).toBeLessThan(300);
    await until('deleted', async () => ((await api.req('GET', `/applications/${uuid}`)).status === 404 ? true : undefined), 30_000);
    expect(containerState(engines, 'a', uuid)).toBeNull();
    expect(containerState(engines, 'b', uuid)).toBeNull();
    expect(volumeExists(engines, 'a', `${uuid}-data`)).toBe(false);
    expect(volumeExists(engines, 'b', `${uuid}-data`)).toBe(false);
  }, 180_000);

  it('between deployments: a copy stopped or removed behind berth on b shows in the application’s counts, started again it runs', async () => {
    const uuid = await app('watched-copy');
    await api.ok('POST', `/applications/${uuid}/destinations`, { destination_uuid: p.destB });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid);
    await copyDeployed(uuid, 1);
    /** The application's view once the copy on b reads as `want` says (the engine watcher of b, no deployment). */
    const copyIs = (what: string, want: (copy: string | null, running: number) => boolean) =>
      until(
        what,
        async () => {
          const v = await api.ok('GET', `/applications/${uuid}`);
          return want(v.additional_destinations[0].status, v.running_copies) ? v : undefined;
        },
        10_000,
        100,
      );
    await copyIs('both running', (copy, n) => copy === 'running:unknown' && n === 2);

    engines.podman('b', ['stop', '-t', '0', uuid]);
    const stopped = await copyIs('the copy on b seen stopped', (copy) => copy === 'exited');
    expect(stopped.running_copies).toBe(1);
    // The primary's own status is untouched by its copy's.
    expect(stopped.status).toBe('running:unknown');
    expect((await api.ok('GET', `/applications/${uuid}/destinations`))[1]).toMatchObject({ uuid: p.destB, status: 'exited' });

    engines.podman('b', ['start', uuid]);
    expect((await copyIs('the copy on b seen running again', (copy, n) => copy === 'running:unknown' && n === 2)).status).toBe('running:unknown');

    engines.podman('b', ['rm', '-f', uuid]);
    expect((await copyIs('the copy on b seen removed', (copy) => copy === 'exited')).running_copies).toBe(1);
    await api.ok('DELETE', `/applications/${uuid}`);
    await until('deleted', async () => ((await api.req('GET', `/applications/${uuid}`)).status === 404 ? true : undefined), 30_000);
  }, 120_000);

  it('a built application: the copy runs the image built on a, carried over to b', async () => {
    const { uuid } = await api.ok('POST', '/applications/dockerfile', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      ports_exposes: '80',
      dockerfile: Buffer.from(`FROM ${SLEEPER_IMAGE}\nLABEL built=berth-test\n`).toString('base64'),
    });
    await api.ok('POST', `/applications/${uuid}/destinations`, { destination_uuid: p.destB });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);
    const copy = await copyDeployed(uuid, 1);
    expect(copy.logs).toContain('copied localhost/berth-app-');
    const a = containerState(engines, 'a', uuid)!;
    expect(containerState(engines, 'b', uuid)).toMatchObject({ running: true, image: a.image });
    await api.ok('DELETE', `/applications/${uuid}`);
    await until('deleted', async () => ((await api.req('GET', `/applications/${uuid}`)).status === 404 ? true : undefined), 30_000);
    expect(containerState(engines, 'b', uuid)).toBeNull();
  }, 180_000);

  it('refuses the primary, its server, a second destination on one server, and another team’s destination as a missing one', async () => {
    const uuid = await app('refusals');
    const add = (destination_uuid: string) => api.req('POST', `/applications/${uuid}/destinations`, { destination_uuid });
    const primary = await add(p.destA);
    expect(primary.status).toBe(422);
    expect(primary.json.errors.destination_uuid).toEqual(['Destination is already the primary destination.']);
    const sameServer = await api.ok('POST', `/servers/${p.serverA}/destinations`, { network: `same-${Date.now()}` });
    const onPrimaryServer = await add(sameServer.uuid);
    expect(onPrimaryServer.status).toBe(422);
    expect(onPrimaryServer.json.errors.destination_uuid).toEqual(['Cannot attach a destination on the same server as the primary destination.']);
    expect((await add(p.destB)).status).toBe(201);
    const again = await add(p.destB);
    expect(again.status).toBe(409);
    expect(again.json).toEqual({ message: 'Destination is already attached.' });
    const secondOnB = await api.ok('POST', `/servers/${p.serverB}/destinations`, { network: `second-${Date.now()}` });
    const twoOnB = await add(secondOnB.uuid);
    expect(twoOnB.status).toBe(422);
    expect(twoOnB.json.errors.destination_uuid).toEqual(['A destination on this server is already attached.']);
    // Strict input: an unknown field is named.
    const extra = await api.req('POST', `/applications/${uuid}/destinations`, { destination_uuid: p.destB, server_uuid: p.serverB });
    expect(extra.status).toBe(422);
    expect(Object.keys(extra.json.errors)).toContain('server_uuid');
    // The primary cannot be removed; a destination in use by an application's copy cannot be deleted.
    const removePrimary = await api.req('DELETE', `/applications/${uuid}/destinations/${p.destA}`);
    expect(removePrimary.status).toBe(422);
    const inUse = await api.req('DELETE', `/destinations/${p.destB}`);
    expect(inUse.status).toBe(409);
    // The primary does not migrate onto a server where a copy of it runs.
    const onto = await api.req('POST', `/applications/${uuid}/migrate`, { destination_uuid: p.destB });
    expect(onto.status, onto.text).toBe(422);
    expect(onto.json.errors.destination_uuid[0]).toMatch(/already runs on that server as an additional destination/);

    // Another team: its destination is a 404 for this team, byte for byte a missing one's; and
    // this team's application is a 404 for it.
    const other = await s.team(`other ${Date.now()}`);
    const otherApi = new Api(s.url, other.rootToken);
    const otherServer = await otherApi.ok('POST', '/servers', { name: 'other', ip: '10.9.9.9' });
    const otherDest = (await otherApi.ok('GET', `/servers/${otherServer.uuid}/destinations`))[0].uuid;
    const foreign = await add(otherDest);
    const missing = await add('abcdefghijklmnopqrstuvwx');
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    const fromOther = await otherApi.req('GET', `/applications/${uuid}/destinations`);
    expect(fromOther.status).toBe(404);
    expect(fromOther.text).toBe('{"message":"Resource not found."}');
    expect((await otherApi.req('DELETE', `/applications/${uuid}/destinations/${p.destB}`)).status).toBe(404);
    expect((await api.ok('GET', `/applications/${uuid}/destinations`)).length).toBe(2);
    await api.ok('DELETE', `/applications/${uuid}/destinations/${p.destB}`);
    await api.ok('DELETE', `/applications/${uuid}`);
  }, 60_000);
});
