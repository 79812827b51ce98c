/**
 * Migrations across SSH, end to end: the two real engines reached both directly (unix sockets,
 * the root team's) and through a real sshd on loopback (the way a VPS is reached), so a volume
 * moves SSH → local, local → SSH and SSH → SSH, every byte checked with busybox's sha256sum on
 * the target and the source checked untouched. Then the SSH connection is cut in the middle of
 * a copy: the migration fails cleanly, nothing is left on the target, and the application is
 * back where it was, running, on its untouched volume.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeKey, sshdAvailable, useSshd } from '../helpers/sshd.js';
import {
  Api,
  containersLabelled,
  containerState,
  deployed,
  ensureSleeperImage,
  KNOWN_FILES,
  LARGE_MIXED,
  migrationEnded,
  registerSshServer,
  SLEEPER_IMAGE,
  sumsInContainer,
  until,
  volumeExists,
  volumeNames,
  volumesLabelled,
  volumeTruth,
  writeVolume,
  type VolumeTruth,
} from './support.js';

type Engine = 'a' | 'b';
interface Place {
  server: string;
  dest: string;
  engine: Engine;
}

describe.skipIf(!enginesAvailable || !sshdAvailable)('migrations across SSH', () => {
  const engines = useEngines();
  const sshd = useSshd();
  let s: TestServer;
  let api: Api;
  let project: string;
  const at: Record<'sshA' | 'sshB' | 'localA' | 'localB', Place> = {} as never;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    // Polled closely while bytes move: no rate limit in the way.
    s = await startTestServer({ helperImage: ENGINE_IMAGE, apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    const key = makeKey();
    sshd.authorize('root', key.publicLine);
    const keyUuid = (await api.ok('POST', '/security/keys', { private_key: key.text })).uuid;
    for (const [name, engine] of [
      ['sshA', 'a'],
      ['sshB', 'b'],
    ] as const) {
      const srv = await registerSshServer(api, name, { port: sshd.port, keyUuid, socket: engine === 'a' ? engines.socketA : engines.socketB });
      expect(srv.validation, JSON.stringify(srv.validation)).toMatchObject({ is_usable: true });
      at[name] = { server: srv.uuid, dest: srv.dest, engine };
    }
    for (const [name, engine] of [
      ['localA', 'a'],
      ['localB', 'b'],
    ] as const) {
      const { uuid } = await api.ok('POST', '/servers', { name, ip: '127.0.0.1', engine_endpoint: `unix://${engine === 'a' ? engines.socketA : engines.socketB}` });
      expect((await api.ok('POST', `/servers/${uuid}/validate`)).is_usable).toBe(true);
      at[name] = { server: uuid, dest: (await api.ok('POST', `/servers/${uuid}/destinations`, { network: 'none' })).uuid, engine };
    }
    project = (await api.ok('POST', '/projects', { name: 'migrate over ssh' })).uuid;
  }, 90_000);
  afterAll(async () => {
    await s?.stop();
  });

  async function runningApp(name: string, where: Place, fill: (volume: string) => void): Promise<{ uuid: string; volume: string; before: VolumeTruth }> {
    const [repo, tag] = SLEEPER_IMAGE.split(':');
    const { uuid } = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: project,
      server_uuid: where.server,
      destination_uuid: where.dest,
      environment_name: 'production',
      name,
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
    });
    await api.ok('POST', `/applications/${uuid}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid);
    expect(containerState(engines, where.engine, uuid)).toMatchObject({ running: true });
    const volume = (await volumeNames(api, 'applications', uuid)).data!;
    fill(volume);
    return { uuid, volume, before: volumeTruth(engines, where.engine, volume) };
  }

  it.each([
    ['SSH → local', 'sshA', 'localB'],
    ['local → SSH', 'localA', 'sshB'],
    ['SSH → SSH', 'sshB', 'sshA'],
  ] as const)(
    '%s: every byte, mode and owner on the target, nothing left on the source, and it runs there after a redeploy',
    async (label, from, to) => {
      const src = at[from];
      const dst = at[to];
      const app = await runningApp(`app-${from}-${to}`.toLowerCase(), src, (v) => writeVolume(engines, src.engine, v, KNOWN_FILES, ['4']));
      const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: dst.dest });
      expect(r, label).toMatchObject({ moves_data: true, status: 'pending' });
      const m = await migrationEnded(api, r.migration_uuid, 90_000);
      expect(m, JSON.stringify(m)).toMatchObject({ status: 'finished', error: null });
      expect(m.progress).toMatchObject({ phase: 'done', volumes_total: 1, volumes_done: 1, bytes_total: app.before.bytes });

      expect(await api.ok('GET', `/applications/${app.uuid}`)).toMatchObject({ server_uuid: dst.server, destination_uuid: dst.dest, status: 'exited' });
      const moved = (await volumeNames(api, 'applications', app.uuid)).data!;
      const after = volumeTruth(engines, dst.engine, moved);
      expect(after.listing).toBe(app.before.listing);
      expect(after.sums).toBe(app.before.sums);
      // The source's container and volume are removed over its own transport once the copy is verified.
      await until('the source cleared', async () => (!volumeExists(engines, src.engine, app.volume) && containerState(engines, src.engine, app.uuid) === null ? true : undefined), 20_000);
      expect(containersLabelled(engines, 'a', `berth.migration=${r.migration_uuid}`)).toEqual([]);
      expect(containersLabelled(engines, 'b', `berth.migration=${r.migration_uuid}`)).toEqual([]);

      await deployed(api, (await api.ok('POST', `/deploy?uuid=${app.uuid}`)).deployments[0].deployment_uuid);
      expect(containerState(engines, dst.engine, app.uuid)).toMatchObject({ running: true });
      expect(sumsInContainer(engines, dst.engine, app.uuid, '/data')).toBe(app.before.sums);
    },
    120_000,
  );

  it('the SSH connection cut mid-copy: the migration either carries on over a new connection to a verified copy, or fails cleanly with the app running on the source as before', async () => {
    const src = at.sshA;
    // 160 MiB: the full copy over SSH takes seconds here even unloaded (about 90 MB/s), and the
    // cut comes within a progress save (250 ms) of the first 4 MiB.
    const app = await runningApp('cut-mid-copy', src, (v) => writeVolume(engines, src.engine, v, LARGE_MIXED, ['160']));
    const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: at.localB.dest });
    // Wait until bytes are moving, then kill every SSH connection (the listener stays up).
    const moving = await until(
      'bytes moving',
      async () => {
        const m = await api.ok('GET', `/migrations/${r.migration_uuid}`);
        expect(m.status).not.toBe('finished');
        return m.progress.bytes > 4 * 1024 * 1024 ? m : undefined;
      },
      60_000,
      20,
    );
    expect(sshd.dropConnections()).toBeGreaterThanOrEqual(1);
    // The cut came in the middle of the full copy, not after it.
    expect(moving.progress, JSON.stringify(moving.progress)).toMatchObject({ phase: 'pre-copy', round: 1 });
    expect(moving.progress.bytes).toBeLessThan(app.before.bytes);

    const m = await migrationEnded(api, r.migration_uuid, 90_000);
    if (m.status === 'finished') {
      // A cut in the first round: that round counts as incomplete and the next sends everything
      // over a new connection; the verification of every entry passed, so the copy is exact.
      const moved = (await volumeNames(api, 'applications', app.uuid)).data!;
      expect(await api.ok('GET', `/applications/${app.uuid}`)).toMatchObject({ server_uuid: at.localB.server, status: 'exited' });
      expect(volumeTruth(engines, 'b', moved).sums).toBe(app.before.sums);
      await until('the source cleared', async () => (!volumeExists(engines, 'a', app.volume) && containerState(engines, 'a', app.uuid) === null ? true : undefined), 20_000);
      return;
    }
    expect(m.status, JSON.stringify(m)).toBe('failed');
    expect(m.error).toBeTruthy();
    expect(await api.ok('GET', `/applications/${app.uuid}`)).toMatchObject({ server_uuid: src.server, destination_uuid: src.dest, status: 'running:unknown' });
    expect((await volumeNames(api, 'applications', app.uuid)).data).toBe(app.volume);
    // Started again on a (over a new SSH connection), on the volume it had.
    expect(containerState(engines, 'a', app.uuid)).toMatchObject({ running: true });
    expect(volumeTruth(engines, 'a', app.volume)).toEqual(app.before);
    expect(volumesLabelled(engines, 'b', `berth.migration=${r.migration_uuid}`)).toEqual([]);
    expect(containersLabelled(engines, 'b', `berth.migration=${r.migration_uuid}`)).toEqual([]);
    // Helpers on a were removed through the new connection too.
    await until('helpers removed on a', async () => (containersLabelled(engines, 'a', `berth.migration=${r.migration_uuid}`).length === 0 ? true : undefined), 20_000);
  }, 180_000);
});
