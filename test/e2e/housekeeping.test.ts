/**
 * Server housekeeping on a real engine: volume backups (an archive of the data, retention, a
 * stop during the archive when asked) and Docker cleanup.
 *
 * Docker cleanup: unused images and what the caller asked for go; what berth's
 * records name (a stopped resource's data, a destination's network) and berth's own volumes stay.
 * The schedule claims each due slot once, however many instances tick.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerCleanupSchedule } from '../../src/workers/cleanup-schedule.js';
import { createLogger } from '../../src/logging/logger.js';
import { LiveRuntime } from '../../src/engine/live-runtime.js';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployAppWithVolume, deployed, ensureSleeperImage, registerEngines, until, volumeExists, writeVolume, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)(`docker cleanup on a real engine ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines({ own: "it prunes engine a (unused volumes, networks, dangling images): other files' would go" });
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    // The cleanup schedule is ticked by the test itself: serve's scheduler must not take its slot.
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image, scheduleTickMs: 3_600_000 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    ensureSleeperImage(engines);
  }, 120_000);
  afterAll(() => s?.stop());

  const images = () => engines.podman('a', ['images', '--format', '{{.ID}} {{.Repository}}']);
  const networkExists = (n: string) => engines.podman('a', ['network', 'ls', '--format', '{{.Name}}']).split('\n').includes(n);

  it('removes dangling images, unused volumes and networks; keeps a resource’s data, berth’s volumes and destinations', async () => {
    const app = (
      await api.ok('POST', '/applications/dockerimage', {
        project_uuid: p.project,
        server_uuid: p.serverA,
        destination_uuid: p.destA,
        environment_name: 'production',
        docker_registry_image_name: 'localhost/berth-busybox',
      })
    ).uuid as string;
    await api.ok('POST', `/applications/${app}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
    // A stopped resource's data: no container uses it, yet it is not garbage.
    engines.podman('a', ['volume', 'create', `${app}-data`]);
    engines.podman('a', ['volume', 'create', 'orphan-volume']);
    engines.podman('a', ['volume', 'create', 'berth-backups-keepme']);
    engines.podman('a', ['network', 'create', 'orphan-net']);
    const kept = (await api.ok('POST', `/servers/${p.serverA}/destinations`, { network: 'kept-net' })).uuid as string;
    engines.podman('a', ['network', 'create', 'kept-net']);
    // An untagged image: what rebuilding an image leaves behind.
    const dangling = engines
      .podman('a', ['import', '--quiet', `${engines.dir}/busybox-rootfs.tar`])
      .trim()
      .replace(/^sha256:/, '')
      .slice(0, 12);
    expect(images()).toContain(dangling);

    const run = await api.ok('POST', `/servers/${p.serverA}/docker-cleanup/run`, { delete_unused_volumes: true, delete_unused_networks: true });
    const done = await until(
      'the cleanup ends',
      async () => {
        const [e] = await api.ok('GET', `/servers/${p.serverA}/docker-cleanup/executions`);
        return e?.status === 'running' ? undefined : e;
      },
      60_000,
    );
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

  it('a volume backup archives the data into the backup volume, stops the app for it when asked, and keeps the newest N', async () => {
    const app = await deployAppWithVolume(api, p, 'backed-up');
    writeVolume(engines, 'a', app.volume, 'echo "precious $1" > /data/data.txt; mkdir -p /data/sub && echo nested > /data/sub/n.txt', ['bytes']);
    const startedAt = () => Date.parse(JSON.parse(engines.podman('a', ['container', 'inspect', app.uuid]))[0].State.StartedAt);
    const startedBefore = startedAt();
    const storage = (await api.ok('GET', `/applications/${app.uuid}/storages`)).persistent_storages[0].uuid as string;
    const path = `/applications/${app.uuid}/storages/${storage}/backups`;
    const put = await api.ok('PUT', path, { frequency: 'daily', retention_amount_locally: 2, stop_during_backup: true });
    expect(put).toMatchObject({ message: 'Storage backup schedule created.', storage_uuid: storage, frequency: 'daily', retention_amount_locally: 2, stop_during_backup: true, save_s3: false });
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await api.ok('POST', `${path}/run`);
      runs.push(run.execution_uuid);
      await until(
        'the backup ends',
        async () => {
          const e = (await api.ok('GET', path)).executions.find((x: { uuid: string }) => x.uuid === run.execution_uuid);
          return e && e.status !== 'running' ? e : undefined;
        },
        60_000,
      );
      // stop_during_backup: the run ends only once the app runs again.
      expect(JSON.parse(engines.podman('a', ['container', 'inspect', app.uuid]))[0].State.Running).toBe(true);
    }
    // Retention runs right after the third archive is recorded.
    const after = await until(
      'retention applied',
      async () => {
        const b = await api.ok('GET', path);
        return b.executions.length === 2 ? b : undefined;
      },
      30_000,
    );
    // Retention: the newest two stay, the first is gone from the records and from the volume.
    expect(after.executions.map((e: { uuid: string }) => e.uuid)).toEqual([runs[2], runs[1]]);
    expect(after.executions[0]).toMatchObject({ status: 'success', message: 'Backup completed.', filename: expect.stringMatching(/^volume-data-\d{8}T\d{6}Z\.tar\.gz$/) });
    expect(after.executions[0].size).toBeGreaterThan(0);
    const listing = engines.podman('a', ['run', '--rm', '--network', 'none', '-v', `berth-backups-${app.uuid}:/b`, engines.image, 'sh', '-c', 'ls /b; tar -xzOf "/b/$(ls /b | tail -1)" ./data.txt']);
    expect(listing).toContain('precious bytes');
    expect(listing.split('\n').filter((l) => l.startsWith('volume-'))).toHaveLength(2);
    // stop_during_backup: stopped for the archive, started again after.
    expect(startedAt()).toBeGreaterThan(startedBefore);
  }, 180_000);

  it('a service part is started and stopped alone; its logs are its own', async () => {
    const compose = `services:\n  web:\n    image: ${engines.image}\n    command: ["sh", "-c", "echo from-web; trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]\n  worker:\n    image: ${engines.image}\n    command: ["sh", "-c", "echo from-worker; trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]\n`;
    const { uuid } = await api.ok('POST', '/services', { project_uuid: p.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production', docker_compose_raw: compose });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid);
    const parts = await api.ok('GET', `/services/${uuid}/applications`);
    const web = parts.find((x: { name: string }) => x.name === 'web').uuid;
    const running = (name: string) => JSON.parse(engines.podman('a', ['container', 'inspect', `${uuid}-${name}`]))[0].State.Running as boolean;
    expect((await api.ok('POST', `/services/${uuid}/applications/${web}/stop`)).message).toBe(`${uuid}-web stopped`);
    expect([running('web'), running('worker')]).toEqual([false, true]);
    expect((await api.ok('POST', `/services/${uuid}/applications/${web}/start`)).message).toBe(`${uuid}-web started`);
    expect([running('web'), running('worker')]).toEqual([true, true]);
    const logs = (await api.ok('GET', `/services/${uuid}/applications/${web}/logs`)).logs as string;
    expect(logs).toContain('from-web');
    expect(logs).not.toContain('from-worker');
    // Coolify answers POST on this route too (Route::match), reading `lines` from the query.
    const posted = (await api.ok('POST', `/services/${uuid}/applications/${web}/logs?lines=5`)).logs as string;
    expect(posted).toContain('from-web');
    expect(posted).not.toContain('from-worker');
  }, 90_000);

  it('a due slot runs once, even when two instances tick at the same time; a slot before validation never runs', async () => {
    await api.ok('PATCH', `/servers/${p.serverB}/docker-cleanup`, { docker_cleanup_frequency: 'every_minute' });
    const logger = createLogger({ level: 'silent', destination: 'stderr' });
    const runtimes = [new LiveRuntime(s.db, logger, 'busybox:latest', false), new LiveRuntime(s.db, logger, 'busybox:latest', false)];
    const [one, two] = runtimes.map((r) => new DockerCleanupSchedule(s.db, r, logger));
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
    // One `job` entry for the run, attributed to the token whose PATCH set the schedule.
    const run = await s.db.selectFrom('docker_cleanup_executions').select('uuid').where('server_id', '=', server.id).executeTakeFirstOrThrow();
    const entries = await s.db.selectFrom('audit_log').selectAll().where('door', '=', 'job').where('operation', '=', 'run_server_docker_cleanup').execute();
    expect(entries.map((e) => [e.result, e.started_uuid, e.token_id, JSON.parse(e.targets)])).toEqual([['ok', run.uuid, Number(s.rootToken.split('|')[0]), [p.serverB]]]);
    for (const r of runtimes) await r.close();
  }, 60_000);
});
