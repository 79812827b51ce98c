/**
 * POST/PATCH/DELETE /services/{uuid}/storages on a real engine: a named volume added to one
 * container of a service is written into its compose file and mounted at the next deploy; moved
 * to another path, it keeps its data; removed, the container no longer mounts it (the engine
 * volume and its data stay). Volumes written in the compose file are refused with a 422 that says
 * where to change them; Coolify's file storages and host paths are refused by name; another
 * team's service is a 404 like a missing one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, ensureSleeperImage, registerEngines, SLEEPER_IMAGE, volumeExists, type Platform } from './support.js';

const COMPOSE = `# a worker and its cache\nservices:\n  worker:\n    image: ${SLEEPER_IMAGE}\n    volumes:\n      - work:/work\n  cache:\n    image: ${SLEEPER_IMAGE}\nvolumes:\n  work: {}\n`;

describe.skipIf(!enginesAvailable)('service storages on a real engine', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 120_000);
  const made: string[] = [];
  afterAll(async () => {
    // Removed through berth, so no container of this file outlives it on the shared engines.
    for (const uuid of made) await api?.req('DELETE', `/services/${uuid}?delete_volumes=true`);
    await s?.stop();
  }, 120_000);

  const mounts = (container: string): Array<{ Name?: string; Destination: string }> => JSON.parse(engines.podman('a', ['inspect', container, '--format', '{{json .Mounts}}']));
  const deploy = async (uuid: string) => deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}&force=true`)).deployments[0].deployment_uuid, 60_000);

  it('adds a volume to one container, moves it with its data, removes it; compose volumes stay the compose file’s', async () => {
    const { uuid } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'stack',
      docker_compose_raw: COMPOSE,
    });
    made.push(uuid);
    const parts = await api.ok('GET', `/services/${uuid}/applications`);
    const cache = (parts as Array<{ uuid: string; name: string }>).find((x) => x.name === 'cache')!;

    const created = await api.req('POST', `/services/${uuid}/storages`, { type: 'persistent', resource_uuid: cache.uuid, name: 'cache-data', mount_path: '/cache' });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({ name: 'cache-data', mount_path: '/cache', container: 'cache', volume_name: `${uuid}-cache-data` });
    const compose = (await api.ok('GET', `/services/${uuid}`)).docker_compose_raw as string;
    expect(compose).toContain('# a worker and its cache');
    expect(compose).toMatch(/cache:\n\s+image: .*\n\s+volumes:\n\s+- cache-data:\/cache/);

    await deploy(uuid);
    expect(mounts(`${uuid}-cache`)).toEqual(expect.arrayContaining([expect.objectContaining({ Name: `${uuid}-cache-data`, Destination: '/cache' })]));
    engines.podman('a', ['exec', `${uuid}-cache`, 'sh', '-c', 'echo kept > /cache/f']);

    // Coolify names the storage by body uuid (or id); berth's storage_uuid works too.
    const moved = await api.req('PATCH', `/services/${uuid}/storages`, { uuid: created.json.uuid, type: 'persistent', mount_path: '/cache2' });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json).toMatchObject({ uuid: created.json.uuid, mount_path: '/cache2', volume_name: `${uuid}-cache-data` });
    await deploy(uuid);
    expect(engines.podman('a', ['exec', `${uuid}-cache`, 'cat', '/cache2/f']).trim()).toBe('kept');

    // Volumes the compose file declares are changed there, as Coolify keeps service volumes read-only.
    const list = await api.ok('GET', `/services/${uuid}/storages`);
    const work = (list.persistent_storages as Array<{ uuid: string; name: string }>).find((x) => x.name === 'work')!;
    const ro = await api.req('PATCH', `/services/${uuid}/storages`, { uuid: work.uuid, type: 'persistent', mount_path: '/w2' });
    expect(ro.status).toBe(422);
    expect(ro.json.errors.mount_path[0]).toMatch(/compose file/);
    expect((await api.req('DELETE', `/services/${uuid}/storages/${work.uuid}`)).status).toBe(422);

    const gone = await api.req('DELETE', `/services/${uuid}/storages/${created.json.uuid}`);
    expect(gone.status, gone.text).toBe(200);
    expect((await api.ok('GET', `/services/${uuid}/storages`)).persistent_storages.map((x: { name: string }) => x.name)).toEqual(['work']);
    await deploy(uuid);
    expect(mounts(`${uuid}-cache`).map((m) => m.Destination)).not.toContain('/cache2');
    expect(volumeExists(engines, 'a', `${uuid}-cache-data`)).toBe(true);
  }, 180_000);

  it('refuses what berth cannot apply by name, and hides other teams’ services', async () => {
    const { uuid } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'refusals',
      docker_compose_raw: COMPOSE,
    });
    made.push(uuid);
    const worker = ((await api.ok('GET', `/services/${uuid}/applications`)) as Array<{ uuid: string; name: string }>).find((x) => x.name === 'worker')!;
    const before = await api.ok('GET', `/services/${uuid}`);
    const file = await api.req('POST', `/services/${uuid}/storages`, { type: 'file', resource_uuid: worker.uuid, mount_path: '/etc/app.conf', content: 'x=1' });
    expect(file.status).toBe(422);
    expect(Object.keys(file.json.errors).sort()).toEqual(['content', 'type']);
    expect(file.json.errors.content[0]).toMatch(/berth does not support file storages/);
    const host = await api.req('POST', `/services/${uuid}/storages`, { type: 'persistent', resource_uuid: worker.uuid, name: 'h', mount_path: '/h', host_path: '/srv/h' });
    expect(Object.keys(host.json.errors)).toEqual(['host_path']);
    const noRes = await api.req('POST', `/services/${uuid}/storages`, { type: 'persistent', name: 'x', mount_path: '/x' });
    expect(noRes.status).toBe(422);
    expect(Object.keys(noRes.json.errors)).toEqual(['resource_uuid']);
    const taken = await api.req('POST', `/services/${uuid}/storages`, { type: 'persistent', resource_uuid: worker.uuid, name: 'other', mount_path: '/work' });
    expect(taken.json.errors).toEqual({ mount_path: ['Another storage is mounted there.'] });
    const dup = await api.req('POST', `/services/${uuid}/storages`, { type: 'persistent', resource_uuid: worker.uuid, name: 'work', mount_path: '/w' });
    expect(dup.json.errors).toEqual({ name: ['A storage with this name already exists.'] });
    const missingPart = await api.req('POST', `/services/${uuid}/storages`, { type: 'persistent', resource_uuid: 'nosuchpart', name: 'x', mount_path: '/x' });
    expect(missingPart.status).toBe(404);

    const team = await s.team('Service storages');
    const foreign = await api.req('POST', `/services/${uuid}/storages`, { type: 'persistent', resource_uuid: worker.uuid, name: 'x', mount_path: '/x' });
    expect(foreign.status).toBe(201);
    const theirs = await new Api(s.url, team.rootToken).req('DELETE', `/services/${uuid}/storages/${foreign.json.uuid}`);
    const missing = await api.req('DELETE', `/services/nosuchservice/storages/${foreign.json.uuid}`);
    expect(theirs.status).toBe(404);
    expect(theirs.text).toBe(missing.text);
    const after = await api.ok('GET', `/services/${uuid}`);
    const volumesOf = (svc: { containers: Array<{ name: string; volumes: string[] }> }, name: string) => svc.containers.find((k) => k.name === name)!.volumes;
    expect(volumesOf(after, 'worker')).toEqual([...volumesOf(before, 'worker'), 'x']);
    expect(volumesOf(after, 'cache')).toEqual(volumesOf(before, 'cache'));
  }, 120_000);
});
