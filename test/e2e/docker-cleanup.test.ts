/**
 * Docker cleanup on a real engine: unused images and what the caller asked for go; what berth's
 * records name (a stopped resource's data, a destination's network) and berth's own volumes stay.
 * The schedule claims each due slot once, however many instances tick.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CleanupSchedule } from '../../src/jobs/cleanup-schedule.js';
import { createLogger } from '../../src/logging/logger.js';
import { LiveRuntime } from '../../src/runtime/live-runtime.js';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, registerEngines, until, volumeExists, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)(`docker cleanup on a real engine ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 120_000);
  afterAll(() => s?.stop());

  const images = () => engines.podman('a', ['images', '--format', '{{.ID}} {{.Repository}}']);
  const networkExists = (n: string) => engines.podman('a', ['network', 'ls', '--format', '{{.Name}}']).split('\n').includes(n);

  it('removes dangling images, unused volumes and networks; keeps a resource’s data, berth’s volumes and destinations', async () => {
    const app = (await api.ok('POST', '/applications/dockerimage', { project_uuid: p.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production', docker_registry_image_name: 'localhost/berth-busybox' })).uuid as string;
    await api.ok('POST', `/applications/${app}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
    // A stopped resource's data: no container uses it, yet it is not garbage.
    engines.podman('a', ['volume', 'create', `${app}-data`]);
    engines.podman('a', ['volume', 'create', 'orphan-volume']);
    engines.podman('a', ['volume', 'create', 'berth-backups-keepme']);
    engines.podman('a', ['network', 'create', 'orphan-net']);
    const kept = (await api.ok('POST', `/servers/${p.serverA}/destinations`, { network: 'kept-net' })).uuid as string;
    engines.podman('a', ['network', 'create', 'kept-net']);
    // An untagged image: what rebuilding an image leaves behind.
    const dangling = engines.podman('a', ['import', '--quiet', `${engines.dir}/busybox-rootfs.tar`]).trim().replace(/^sha256:/, '').slice(0, 12);
    expect(images()).toContain(dangling);

    const run = await api.ok('POST', `/servers/${p.serverA}/docker-cleanup/run`, { delete_unused_volumes: true, delete_unused_networks: true });
    const done = await until('the cleanup ends', async () => {
      const [e] = await api.ok('GET', `/servers/${p.serverA}/docker-cleanup/executions`);
      return e?.status === 'running' ? undefined : e;
    }, 60_000);
    expect(done).toMatchObject({ uuid: run.execution_uuid, status: 'success', message: 'Docker cleanup finished.' });

    expect(images()).not.toContain(dangling);
    expect(images()).toContain('localhost/berth-busybox');
    expect(volumeExists(engines, 'a', 'orphan-volume')).toBe(false);
    expect(volumeExists(engines, 'a', `${app}-data`)).toBe(true);
    expect(volumeExists(engines, 'a', 'berth-backups-keepme')).toBe(true);
    expect(networkExists('orphan-net')).toBe(false);
    expect(networkExists('kept-net')).toBe(true);
    expect(kept).toBeTruthy();
  }, 90_000);

  it('a due slot runs once, even when two instances tick at the same time; a slot before validation never runs', async () => {
    await api.ok('PATCH', `/servers/${p.serverB}/docker-cleanup`, { docker_cleanup_frequency: 'every_minute' });
    const logger = createLogger({ level: 'silent', destination: 'stderr' });
    const runtimes = [new LiveRuntime(s.db, logger, 'busybox:latest', false), new LiveRuntime(s.db, logger, 'busybox:latest', false)];
    const [one, two] = runtimes.map((r) => new CleanupSchedule(s.db, r, logger, 60_000));
    const server = await s.db.selectFrom('servers').select(['id', 'validated_at']).where('uuid', '=', p.serverB).executeTakeFirstOrThrow();
    const rows = () => s.db.selectFrom('docker_cleanup_executions').select(['status', 'scheduled_for']).where('server_id', '=', server.id).execute();

    await one!.tick(new Date(Date.parse(server.validated_at!) - 120_000));
    expect(await rows()).toEqual([]);
    const due = new Date(Date.parse(server.validated_at!) + 90_000);
    await Promise.all([one!.tick(due), two!.tick(due)]);
    await one!.tick(due);
    const after = await rows();
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ status: 'success', scheduled_for: new Date(Math.floor(due.getTime() / 60_000) * 60_000).toISOString() });
    for (const r of runtimes) await r.close();
  }, 60_000);
});
