/**
 * End to end, on two real engines: an application with a persistent volume of known files is
 * deployed on engine a, migrated to engine b through the REST API and through an MCP client
 * (with a progress token), and every byte is checked on b with busybox's sha256sum, the source
 * is checked untouched, the records are checked to point at b, and a redeploy runs it on b with
 * the copied volume. Then the two cases where no data may move: migrate_volumes false and an
 * unmanaged destination.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { httpClient, type AnyClient } from '../helpers/mcp.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  Api,
  containersLabelled,
  containerState,
  deployed,
  deploymentCount,
  ensureSleeperImage,
  KNOWN_FILES,
  migrationEnded,
  registerEngines,
  SLEEPER_IMAGE,
  sleep,
  sumsInContainer,
  until,
  volumeExists,
  volumeNames,
  volumesLabelled,
  volumeTruth,
  writeVolume,
  type Platform,
  type VolumeTruth,
  deployAppWithVolume,
} from './support.js';

describe.skipIf(!enginesAvailable)('migrating an application between two engines', () => {
  const engines = useEngines({ own: "it checks that nothing at all was added to engine b's volumes" });
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let mcp: AnyClient;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ helperImage: ENGINE_IMAGE, apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    mcp = await httpClient('v2-modern', s.url, s.rootToken);
  }, 60_000);
  afterAll(async () => {
    await mcp?.close();
    await s?.stop();
  });

  /** An application running on engine a, its volume filled with KNOWN_FILES (`mib` MiB in its largest file). */
  async function runningApp(name: string, mib: number, image = SLEEPER_IMAGE): Promise<{ uuid: string; volume: string; before: VolumeTruth }> {
    // An image whose command exits at once crash-loops: its deploy fails, and it says restarting.
    const { uuid, volume } = await deployAppWithVolume(api, p, name, image, image === SLEEPER_IMAGE ? 'finished' : 'failed');
    if (image === SLEEPER_IMAGE) expect(containerState(engines, 'a', uuid)).toMatchObject({ running: true });
    // (The engine restarts it a moment after the failed deploy: wait for the watcher to see that.)
    const status = image === SLEEPER_IMAGE ? /^running:unknown$/ : /^restarting/;
    await until(`status ${status}`, async () => (status.test((await api.ok('GET', `/applications/${uuid}`)).status) ? true : undefined), 10_000, 100);
    expect(volumeExists(engines, 'a', volume)).toBe(true);
    writeVolume(engines, 'a', volume, KNOWN_FILES, [String(mib)]);
    const before = volumeTruth(engines, 'a', volume);
    expect(before.listing).toContain('./file with spaces.txt|regular file|12|600|999:998');
    expect(before.listing).toContain('./empty.txt|regular empty file|0|');
    expect(before.listing).toContain('./dir one/nested/deeper|directory|');
    expect(before.files).toBe(46);
    expect(before.bytes).toBeGreaterThan(mib * 1024 * 1024);
    return { uuid, volume, before };
  }

  /**
   * After a migration with data: records on b, the new volume on b byte for byte the source,
   * nothing of the app left on a (its container, and its volume unless kept: then untouched),
   * not deployed anywhere new, no staging volume or helper container left over. Returns the
   * volume the app now uses.
   */
  async function expectMovedWithData(app: { uuid: string; volume: string; before: VolumeTruth }, migrationUuid: string, deploymentsBefore: number, keptSource = false): Promise<string> {
    const rec = await api.ok('GET', `/applications/${app.uuid}`);
    expect(rec).toMatchObject({ server_uuid: p.serverB, destination_uuid: p.destB, status: 'exited' });
    const moved = (await volumeNames(api, 'applications', app.uuid)).data!;
    expect(moved).not.toBe(app.volume);
    expect(volumeExists(engines, 'b', moved)).toBe(true);

    const after = volumeTruth(engines, 'b', moved);
    expect(after.files).toBe(app.before.files);
    for (const [file, sum] of app.before.hashes) expect(after.hashes.get(file), file).toBe(sum);
    expect(after.listing).toBe(app.before.listing); // types, sizes, modes, owners too
    // The source's leftovers go right after the switch (a REST caller may see `finished` first).
    await until('the source cleared', async () => (containerState(engines, 'a', app.uuid) === null && volumeExists(engines, 'a', app.volume) === keptSource ? true : undefined), 20_000);
    if (keptSource) {
      expect(volumeTruth(engines, 'a', app.volume)).toEqual(app.before); // kept, intact
    }
    expect(containerState(engines, 'b', app.uuid)).toBeNull(); // not redeployed
    expect(await deploymentCount(api, app.uuid)).toBe(deploymentsBefore);

    expect(volumesLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([moved]);
    expect(volumesLabelled(engines, 'a', `berth.migration=${migrationUuid}`)).toEqual([]);
    // This migration's helpers (other test files copy volumes on the same engines meanwhile).
    expect(containersLabelled(engines, 'a', `berth.migration=${migrationUuid}`)).toEqual([]);
    expect(containersLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([]);
    return moved;
  }

  /** Redeploys through `deploy` and sees the container run on b with the copied volume and its bytes. */
  async function expectRunsOnB(app: { uuid: string; before: VolumeTruth }, moved: string, deployment: () => Promise<string>) {
    const dep = await deployed(api, await deployment());
    expect(dep.server_uuid).toBe(p.serverB);
    const st = containerState(engines, 'b', app.uuid);
    expect(st).toMatchObject({ running: true, image: SLEEPER_IMAGE });
    expect(st!.mounts).toEqual([expect.objectContaining({ Name: moved, Destination: '/data', RW: true })]);
    expect(sumsInContainer(engines, 'b', app.uuid, '/data')).toBe(app.before.sums);
    expect(containerState(engines, 'a', app.uuid)).toBeNull();
    expect((await api.ok('GET', `/applications/${app.uuid}`)).status).toBe('running:unknown');
  }

  it('REST: 200 pending, refuses deploys while migrating, finishes; every byte on b, source kept on request, runs on b after a redeploy', async () => {
    const app = await runningApp('rest-app', 3);
    const deploymentsBefore = await deploymentCount(api, app.uuid);

    const r = await api.req('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB, migrate_volumes: true, keep_source_volumes: true });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ uuid: app.uuid, destination_uuid: p.destB, migrate_volumes: true, moves_data: true, async: true, volume_jobs: 1, status: 'pending' });
    expect(r.json.message).toMatch(/copied to the new server while it runs; it is stopped only for the last pass/);
    const migrationUuid = r.json.migration_uuid as string;

    // While the volume moves the app is `migrating` and refuses deploys and a second migrate.
    expect((await api.ok('GET', `/applications/${app.uuid}`)).status).toBe('migrating');
    expect((await api.req('POST', `/deploy?uuid=${app.uuid}`)).status).toBe(409);
    expect((await api.req('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB })).status).toBe(409);

    const m = await migrationEnded(api, migrationUuid);
    expect(m, JSON.stringify(m)).toMatchObject({ status: 'finished', moves_data: true, error: null, resource_uuid: app.uuid, destination_uuid: p.destB });
    expect(m.progress).toMatchObject({ phase: 'done', volumes_total: 1, volumes_done: 1, bytes_total: app.before.bytes });
    // Every round's bytes count (the first sends the whole archive), and the pause is recorded.
    expect(m.progress.bytes).toBeGreaterThan(app.before.bytes);
    expect(m.downtime_ms).toBeGreaterThan(0);

    const moved = await expectMovedWithData(app, migrationUuid, deploymentsBefore, true);
    await expectRunsOnB(app, moved, async () => (await api.ok('POST', `/deploy?uuid=${app.uuid}`)).deployments[0].deployment_uuid);
    expect(volumeExists(engines, 'a', app.volume)).toBe(true); // the kept copy is the caller's to remove
  }, 90_000);

  it('MCP with a progress token: the call waits, progress notifications arrive (at most ~4 a second, with a total), every byte on b, runs on b after a redeploy', async () => {
    const app = await runningApp('mcp-app', 64);
    const deploymentsBefore = await deploymentCount(api, app.uuid);

    const progress: Array<{ progress: number; total?: number; message?: string }> = [];
    const started = Date.now();
    const r = await mcp.callTool('migrate_application', { uuid: app.uuid, destination_uuid: p.destB }, (n) => progress.push(n));
    const took = Date.now() - started;
    expect(r.isError, JSON.stringify(r)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ uuid: app.uuid, destination_uuid: p.destB, migrate_volumes: true, moves_data: true, status: 'finished' });
    expect(r.structuredContent!.message).toMatch(/moved to the new destination/);
    expect(r.structuredContent).not.toHaveProperty('started_on_destination');

    // Notifications came while the data moved; their progress only grows (MCP requires it).
    const shown = JSON.stringify(progress);
    expect(progress.length, shown).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress, shown).toBeGreaterThan(progress[i - 1]!.progress);
    // Throttled: one per 250 ms at most, plus the last one (the copy of 64 MiB takes seconds
    // here; one per 64 KiB chunk would be a thousand).
    expect(progress.length, shown).toBeLessThanOrEqual(Math.ceil(took / 250) + 2);
    // A total from the first notification on (measured before the copy), never below progress;
    // the last one is the end: progress = total.
    for (const n of progress) {
      expect(n.total, shown).toBeGreaterThan(app.before.bytes);
      expect(n.progress, shown).toBeLessThanOrEqual(n.total!);
    }
    expect(progress.at(-1)!.progress).toBe(progress.at(-1)!.total);
    expect(progress.at(-1)!.message).toMatch(/^done \(done\)/);
    for (const n of progress) expect(n.message, shown).toMatch(/^(pre-copy|final-sync|verify|switch|done) \([^)]+\), round \d+: \d\/1 volumes verified, [\d.]+ MiB sent of ~[\d.]+ MiB/);

    const m = await mcp.callTool('get_migration', { uuid: r.structuredContent!.migration_uuid as string });
    expect(m.structuredContent).toMatchObject({ status: 'finished', progress: { phase: 'done', volumes_done: 1, bytes_total: app.before.bytes }, downtime_ms: expect.any(Number) });
    expect(r.structuredContent!.downtime_ms).toBe(m.structuredContent!.downtime_ms);

    // The same records through MCP as through REST.
    const storages = await mcp.callTool('list_application_storages', { uuid: app.uuid });
    const moved = await expectMovedWithData(app, r.structuredContent!.migration_uuid as string, deploymentsBefore);
    expect(storages.structuredContent).toMatchObject({ persistent_storages: [{ name: 'data', volume_name: moved }] });

    await expectRunsOnB(app, moved, async () => {
      const d = await mcp.callTool('deploy', { uuid: app.uuid });
      expect(d.isError, JSON.stringify(d)).toBeFalsy();
      return (d.structuredContent as { deployments: Array<{ deployment_uuid: string }> }).deployments[0]!.deployment_uuid;
    });
  }, 90_000);

  it('start_on_destination: the call waits (wait: true) and the app runs on b right after the switch, on the copied volume', async () => {
    const app = await runningApp('start-app', 2);
    const r = await api.req('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB, start_on_destination: true, wait: true });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ status: 'finished', moves_data: true, started_on_destination: true });
    expect(r.json.message).toMatch(/moved to the new destination and started there/);
    const moved = (await volumeNames(api, 'applications', app.uuid)).data!;
    const st = containerState(engines, 'b', app.uuid);
    expect(st).toMatchObject({ running: true, image: SLEEPER_IMAGE });
    expect(st!.mounts).toEqual([expect.objectContaining({ Name: moved, Destination: '/data', RW: true })]);
    expect(sumsInContainer(engines, 'b', app.uuid, '/data')).toBe(app.before.sums);
    expect(containerState(engines, 'a', app.uuid)?.running ?? false).toBe(false);
    expect((await api.ok('GET', `/applications/${app.uuid}`)).status).toMatch(/^running/);
    const m = await api.ok('GET', `/migrations/${r.json.migration_uuid}`);
    expect(m).toMatchObject({ status: 'finished', start_on_destination: true, error: null, start_deployment_uuid: r.json.start_deployment_uuid });
    // Started by a start deployment on b's queue, as start_application does.
    expect(await api.ok('GET', `/deployments/${r.json.start_deployment_uuid}`)).toMatchObject({ kind: 'start', status: 'finished', server_uuid: p.serverB });
  }, 90_000);

  it('a container that keeps restarting (its command exits at once) is really stopped before the copy, and stays stopped on a', async () => {
    // busybox's own CMD is a shell that exits at once: under the restart policy podman restarts
    // it again and again, and a stop does not stick (it answers 304 between two restarts).
    const app = await runningApp('crash-loop-app', 1, ENGINE_IMAGE);
    const r0 = containerState(engines, 'a', app.uuid)!.restarts;
    // Restarted again meanwhile (a loaded machine may take more than a second for one).
    await until('a restart', async () => (containerState(engines, 'a', app.uuid)!.restarts > r0 ? true : undefined), 15_000, 100);
    const deploymentsBefore = await deploymentCount(api, app.uuid);

    const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB });
    const m = await migrationEnded(api, r.migration_uuid);
    expect(m.status, JSON.stringify(m)).toBe('finished');
    await expectMovedWithData(app, r.migration_uuid, deploymentsBefore);
    // Not left running (or restarting) on the old server: removed.
    await sleep(800);
    expect(containerState(engines, 'a', app.uuid)).toBeNull();
  }, 120_000);

  it('migrate_volumes false: the records move, no data moves (nothing staged on b), and the answer says so', async () => {
    const app = await runningApp('no-volumes-app', 1);
    const deploymentsBefore = await deploymentCount(api, app.uuid);
    const volumesOnB = engines.podman('b', ['volume', 'ls', '--format', '{{.Name}}']);

    const r = await api.req('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB, migrate_volumes: false });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ migrate_volumes: false, moves_data: false, async: false, volume_jobs: 0, status: 'finished' });
    expect(r.json.message).toMatch(/migrate_volumes is false, so no volume data moves/);
    expect((await api.ok('GET', `/migrations/${r.json.migration_uuid}`)).status).toBe('finished');

    const rec = await api.ok('GET', `/applications/${app.uuid}`);
    expect(rec).toMatchObject({ server_uuid: p.serverB, destination_uuid: p.destB, status: 'exited' });
    // The storage keeps its volume name; nothing of it was created or staged on b.
    expect((await volumeNames(api, 'applications', app.uuid)).data).toBe(app.volume);
    expect(engines.podman('b', ['volume', 'ls', '--format', '{{.Name}}'])).toBe(volumesOnB);
    expect(volumesLabelled(engines, 'b', `berth.migration=${r.json.migration_uuid}`)).toEqual([]);
    expect(volumeExists(engines, 'b', app.volume)).toBe(false);
    expect(containersLabelled(engines, 'b', `berth.migration=${r.json.migration_uuid}`)).toEqual([]);
    // Its container gone from a, its data left there untouched (not moved), not redeployed.
    expect(containerState(engines, 'a', app.uuid)).toBeNull();
    expect(containerState(engines, 'b', app.uuid)).toBeNull();
    expect(volumeTruth(engines, 'a', app.volume)).toEqual(app.before);
    expect(await deploymentCount(api, app.uuid)).toBe(deploymentsBefore);
  }, 60_000);

  it('an unmanaged destination (no engine endpoint): the records move, no data moves, and the answer says why', async () => {
    const app = await runningApp('unmanaged-app', 1);
    const { uuid: serverC } = await api.ok('POST', '/servers', { ip: '10.77.0.1', name: 'no-engine' });
    expect((await api.ok('GET', `/servers/${serverC}`)).is_managed).toBe(false);
    const destC = (await api.ok('GET', `/servers/${serverC}/destinations`))[0].uuid as string;
    const volumesOnB = engines.podman('b', ['volume', 'ls', '--format', '{{.Name}}']);

    // Over MCP with a progress token too: nothing to wait for, so it answers at once.
    const progress: unknown[] = [];
    const r = await mcp.callTool('migrate_application', { uuid: app.uuid, destination_uuid: destC, migrate_volumes: true }, (n) => progress.push(n));
    expect(r.isError, JSON.stringify(r)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ migrate_volumes: true, moves_data: false, async: false, volume_jobs: 0, status: 'finished' });
    expect(r.structuredContent!.message).toMatch(/not managed by berth \(no validated engine\), so no volume data moves/);
    expect(progress).toEqual([]);

    const rec = await api.ok('GET', `/applications/${app.uuid}`);
    expect(rec).toMatchObject({ server_uuid: serverC, destination_uuid: destC, status: 'exited' });
    expect((await volumeNames(api, 'applications', app.uuid)).data).toBe(app.volume);
    expect(engines.podman('b', ['volume', 'ls', '--format', '{{.Name}}'])).toBe(volumesOnB);
    expect(containerState(engines, 'a', app.uuid)).toBeNull();
    expect(volumeTruth(engines, 'a', app.volume)).toEqual(app.before);

    // A deploy there acts on no engine, says so, and ends failed; the record does not claim it runs.
    const d = await api.ok('POST', `/deploy?uuid=${app.uuid}`);
    expect(d.deployments[0].message).toMatch(/no engine endpoint/);
    await until('record-only deploy', async () => ((await api.ok('GET', `/deployments/${d.deployments[0].deployment_uuid}`)).status === 'failed' ? true : undefined), 10_000);
    expect((await api.ok('GET', `/applications/${app.uuid}`)).status).toBe('exited');
    expect(containerState(engines, 'b', app.uuid)).toBeNull();
    expect(containerState(engines, 'a', app.uuid)).toBeNull();
  }, 60_000);
});
