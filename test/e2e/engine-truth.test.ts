/**
 * What berth says is what the engine does, on a real engine: a crash-looping container is not
 * reported running and its deploy fails; stop ends it for good; a container removed behind
 * berth's back shows within seconds; delete removes containers and volumes (and keeps volumes
 * when asked); an engine unreachable at delete time leaves a record marked deleting that is
 * finished once the engine answers, never an orphan nobody knows about.
 */
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_TIMING } from '../../src/console/live/stream.js';
import { signInByLink } from '../helpers/console.js';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';
import {
  Api,
  containerState,
  deployAppWithVolume,
  ensureExiterImage,
  ensureHttpdImage,
  ensureSleeperImage,
  EXITER_IMAGE,
  HTTPD_IMAGE,
  registerEngines,
  sleep,
  SLEEPER_IMAGE,
  until,
  volumeExists,
  type Platform,
} from './support.js';

describe.skipIf(!enginesAvailable)(`the engine's truth ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    // A short job lease: the tick that retries deletes runs every third of it.
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image, jobLeaseMs: 1_500, watchLeaseMs: 1_500, watchReconcileMs: 2_000 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    ensureSleeperImage(engines);
    ensureExiterImage(engines);
    ensureHttpdImage(engines);
  }, 120_000);
  afterAll(() => s?.stop());

  const app = async (name: string, image: string, server = p.serverA, dest = p.destA) => {
    const [repo, tag] = image.split(':');
    return (
      await api.ok('POST', '/applications/dockerimage', {
        project_uuid: p.project,
        server_uuid: server,
        destination_uuid: dest,
        environment_name: 'production',
        name,
        docker_registry_image_name: repo,
        docker_registry_image_tag: tag,
      })
    ).uuid as string;
  };
  const deployment = async (uuid: string) => {
    const d = (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid as string;
    return until(
      'the deployment ends',
      async () => {
        const r = await api.ok('GET', `/deployments/${d}`);
        return ['queued', 'in_progress'].includes(r.status) ? undefined : r;
      },
      60_000,
    );
  };

  it('a crash-looping container fails its deploy, is never reported running, and stop ends it for good', async () => {
    const uuid = await app('crasher', EXITER_IMAGE);
    const d = await deployment(uuid);
    expect(d.status, d.logs).toBe('failed');
    expect(d.logs).toMatch(/did not stay running \(exit code 3/);
    expect(d.logs).toContain('boom');

    // Its policy restarts it a moment after the failed deploy; the watcher sees each restart, and
    // the exit code from the engine's die event (a look that saw the container running again
    // before that event came has none yet; the event brings another look).
    const seen = await until(
      'a restart and its exit code observed',
      async () => {
        const r = await api.ok('GET', `/applications/${uuid}`);
        return r.restart_count > 0 && r.last_exit_code !== null ? r : undefined;
      },
      10_000,
      100,
    );
    expect(seen.status).toMatch(/^(restarting|exited)/);
    expect(seen.restart_count).toBeGreaterThan(0);
    expect(seen.last_exit_code).toBe(3);
    expect(seen.observed_at).not.toBeNull();
    // The engine agrees that it keeps restarting.
    expect(containerState(engines, 'a', uuid)!.restarts).toBeGreaterThan(0);

    const stopped = await api.ok('POST', `/applications/${uuid}/stop`);
    expect(stopped).toMatchObject({ deployment_status: 'finished', status: 'exited' });
    // One its policy restarted is removed by the stop (volumes kept), and stays gone.
    expect(containerState(engines, 'a', uuid)).toBeNull();
    await sleep(1_500);
    expect(containerState(engines, 'a', uuid)).toBeNull();
    expect((await api.ok('GET', `/applications/${uuid}`)).status).toBe('exited');
    // Idempotent: stopping a stopped application answers the same.
    expect(await api.ok('POST', `/applications/${uuid}/stop`)).toMatchObject({ deployment_status: 'finished', status: 'exited' });
  });

  it('start and restart answer once the container runs; a container removed behind berth shows within 5 s', async () => {
    const uuid = await app('sleeper', SLEEPER_IMAGE);
    const d = await deployment(uuid);
    expect(d.status, d.logs).toBe('finished');
    expect((await api.ok('GET', `/applications/${uuid}`)).status).toBe('running:unknown');
    expect(await api.ok('POST', `/applications/${uuid}/restart`)).toMatchObject({ deployment_status: 'finished', status: 'running:unknown' });
    expect(await api.ok('POST', `/applications/${uuid}/stop`)).toMatchObject({ status: 'exited' });
    expect(await api.ok('POST', `/applications/${uuid}/start`)).toMatchObject({ deployment_status: 'finished', status: 'running:unknown' });
    expect(containerState(engines, 'a', uuid)!.running).toBe(true);

    engines.podman('a', ['rm', '-f', uuid]);
    const gone = await until(
      'berth sees the container gone',
      async () => {
        const r = await api.ok('GET', `/applications/${uuid}`);
        return r.status === 'exited' ? r : undefined;
      },
      5_000,
      100,
    );
    expect(gone.status).toBe('exited');
    // The list reads the same observation (no engine call per row).
    const list = await api.ok('GET', '/applications');
    expect(list.find((a: { uuid: string }) => a.uuid === uuid).status).toBe('exited');
  });

  it('a health check: healthy deploys, a failing one fails the deploy and keeps the previous container serving, unhealthy shows', async () => {
    const [repo, tag] = HTTPD_IMAGE.split(':');
    const { uuid } = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'web',
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
      ports_exposes: '8080',
      health_check_enabled: true,
      health_check_path: '/',
      health_check_port: '8080',
      health_check_interval: 2,
      health_check_timeout: 10, // a check answers at once; 10 s leaves room for podman's exec on a loaded machine
      health_check_retries: 2,
      health_check_start_period: 1,
    });
    const first = await deployment(uuid);
    expect(first.status, first.logs).toBe('finished');
    expect(first.logs).toContain(`${uuid} is healthy`);
    expect((await api.ok('GET', `/applications/${uuid}`)).status).toBe('running:healthy');
    const id = () => JSON.parse(engines.podman('a', ['container', 'inspect', uuid]))[0].Id as string;
    const serving = id();

    // A new version whose check fails: the deploy fails, the new container is removed, the old one serves on.
    await api.ok('PATCH', `/applications/${uuid}`, { health_check_path: '/missing' });
    const second = await deployment(uuid);
    expect(second.status, second.logs).toBe('failed');
    expect(second.logs).toContain('rolling update');
    expect(second.logs).toMatch(/is unhealthy: its health check failed/);
    expect(second.logs).toContain('the previous one keeps running');
    expect(id()).toBe(serving);
    expect(containerState(engines, 'a', uuid)!.running).toBe(true);
    expect(containerState(engines, 'a', `${uuid}-next`)).toBeNull();
    expect((await api.ok('GET', `/applications/${uuid}`)).status).toBe('running:healthy');

    // The running container stops answering its check: berth (running podman's checks) says so.
    engines.podman('a', ['exec', uuid, 'rm', '-f', '/www/index.html']);
    const sick = await until(
      'the status turns unhealthy',
      async () => {
        const r = await api.ok('GET', `/applications/${uuid}`);
        return r.status === 'running:unhealthy' ? r : undefined;
      },
      30_000,
      250,
    );
    expect(sick.status).toBe('running:unhealthy');
    await api.ok('DELETE', `/applications/${uuid}`);
  }, 90_000);

  it("the console's live views say it as it happens: a deployment's log streams as it grows, the resource list shows the engine's status", async () => {
    const saved = LIVE_TIMING.pollMs;
    LIVE_TIMING.pollMs = 100;
    try {
      const owner = await signInByLink(s.url, s.db, s.ownerEmail);
      const [repo, tag] = HTTPD_IMAGE.split(':');
      const { uuid } = await api.ok('POST', '/applications/dockerimage', {
        project_uuid: p.project,
        server_uuid: p.serverA,
        destination_uuid: p.destA,
        environment_name: 'production',
        name: 'watched',
        docker_registry_image_name: repo,
        docker_registry_image_tag: tag,
        ports_exposes: '8080',
        health_check_enabled: true,
        health_check_path: '/',
        health_check_port: '8080',
        health_check_interval: 1,
        health_check_timeout: 10,
        health_check_retries: 5,
        health_check_start_period: 1,
      });
      const d = (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid;
      const sse = await openSse(`${s.url}/deployments/${d}/events`, owner.cookie);
      await sse.next((e) => e.event === 'end', 60_000);
      const states = sse.events.filter((e) => e.event === 'state').map((e) => e.data.text.status);
      expect(states[0]).not.toBe('finished');
      expect(states.at(-1)).toBe('finished');
      // The log came in pieces: whole at first, then only what was added, adding up to the stored log.
      const logs = sse.events.filter((e) => e.event === 'log').map((e) => e.data as { reset?: string; append?: string });
      expect(logs.length).toBeGreaterThan(1);
      expect(logs.slice(1).every((l) => typeof l.append === 'string' && l.append.length > 0)).toBe(true);
      const streamed =
        (logs[0]!.reset ?? '') +
        logs
          .slice(1)
          .map((l) => l.append)
          .join('');
      expect(streamed).toBe((await api.ok('GET', `/deployments/${d}`)).logs);
      expect(streamed).toContain(`${uuid} is healthy`);

      const list = await openSse(`${s.url}/resources/events`, owner.cookie);
      await list.next((e) => e.event === 'state' && e.data.tables.resources.some((r: { id: string; cells: string[] }) => r.id === uuid && r.cells[5] === 'running:healthy'), 30_000);
      list.close();
      await api.ok('DELETE', `/applications/${uuid}`);
    } finally {
      LIVE_TIMING.pollMs = saved;
    }
  }, 90_000);

  it('compose: a container that depends on a healthy one starts after it is healthy; one container down makes the service degraded', async () => {
    const compose = [
      'services:',
      '  db:',
      `    image: ${SLEEPER_IMAGE}`,
      '    healthcheck:',
      // The first check fails (and prepares the next one to pass): healthy only on the second.
      '      test: ["CMD-SHELL", "test -f /tmp/ready || { touch /tmp/ready; exit 1; }"]',
      '      interval: 2s',
      '      retries: 3',
      '  web:',
      `    image: ${SLEEPER_IMAGE}`,
      '    depends_on:',
      '      db:',
      '        condition: service_healthy',
      '',
    ].join('\n');
    const { uuid } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'stack',
      docker_compose_raw: compose,
    });
    const d = await deployment(uuid);
    expect(d.status, d.logs).toBe('finished');
    expect(d.logs).toContain(`${uuid}-db is healthy`);
    const inspect = (name: string) => JSON.parse(engines.podman('a', ['container', 'inspect', name]))[0];
    const db = inspect(`${uuid}-db`);
    const healthyAt = Math.min(...db.State.Health.Log.filter((l: { ExitCode: number }) => l.ExitCode === 0).map((l: { End: string }) => Date.parse(l.End)));
    expect(Date.parse(inspect(`${uuid}-web`).State.StartedAt)).toBeGreaterThanOrEqual(healthyAt);
    expect((await api.ok('GET', `/services/${uuid}`)).status).toBe('running:unknown');

    engines.podman('a', ['rm', '-f', `${uuid}-web`]);
    await until('the service shows degraded', async () => ((await api.ok('GET', `/services/${uuid}`)).status === 'degraded:unhealthy' ? true : undefined), 5_000, 100);
    const parts = await api.ok('GET', `/services/${uuid}/applications`);
    const byName = Object.fromEntries(parts.map((x: { name: string; status: string }) => [x.name, x.status]));
    expect(byName).toMatchObject({ web: 'exited' });
    await api.ok('DELETE', `/services/${uuid}`);
    expect(containerState(engines, 'a', `${uuid}-db`)).toBeNull();
  }, 60_000);

  it('delete removes the containers and volumes; delete_volumes=false keeps the volumes', async () => {
    const kept = await deployAppWithVolume(api, p, 'keeps-data');
    const dropped = await deployAppWithVolume(api, p, 'drops-data');
    engines.podman('a', ['volume', 'create', `berth-backups-${dropped.uuid}`]);

    const k = await api.ok('DELETE', `/applications/${kept.uuid}?delete_volumes=false`);
    expect(k.message).toBe('Application deleted.');
    expect(containerState(engines, 'a', kept.uuid)).toBeNull();
    expect(volumeExists(engines, 'a', kept.volume)).toBe(true);
    expect((await api.req('GET', `/applications/${kept.uuid}`)).status).toBe(404);

    const g = await api.ok('DELETE', `/applications/${dropped.uuid}`);
    expect(g.removed).toEqual(expect.arrayContaining([`removed container ${dropped.uuid}`, `removed volume ${dropped.volume}`, `removed volume berth-backups-${dropped.uuid}`]));
    expect(containerState(engines, 'a', dropped.uuid)).toBeNull();
    expect(volumeExists(engines, 'a', dropped.volume)).toBe(false);
    expect(volumeExists(engines, 'a', `berth-backups-${dropped.uuid}`)).toBe(false);
    // One that never had a backup volume: delete says only what it removed.
    const plain = await deployAppWithVolume(api, p, 'no-backups');
    const n = await api.ok('DELETE', `/applications/${plain.uuid}`);
    expect(n.removed).toContain(`removed volume ${plain.volume}`);
    expect(n.removed).not.toContain(`removed volume berth-backups-${plain.uuid}`);

    // The kept volume has no record any more: the server's orphans name it.
    const orphans = await api.ok('GET', `/servers/${p.serverA}/orphans`);
    expect(orphans.volumes).toContainEqual({ name: kept.volume, resource_uuid: kept.uuid });
    expect(orphans.volumes.map((v: { name: string }) => v.name)).not.toContain(dropped.volume);
    engines.podman('a', ['volume', 'rm', kept.volume]);
  });

  it('an engine unreachable at delete time leaves a record marked deleting, finished once it answers', async () => {
    // A server whose engine is reached through a socket this test can cut: a relay to engine a.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-relay-'));
    const relayPath = path.join(dir, 'relay.sock');
    const sockets = new Set<net.Socket>();
    const relay = () =>
      new Promise<net.Server>((resolve) => {
        const srv = net.createServer((c) => {
          const up = net.connect(engines.socketA);
          sockets.add(c).add(up);
          c.pipe(up).pipe(c);
          const end = () => (c.destroy(), up.destroy());
          c.on('error', end).on('close', end);
          up.on('error', end).on('close', end);
        });
        srv.listen(relayPath, () => resolve(srv));
      });
    let server = await relay();
    const { uuid: serverUuid } = await api.ok('POST', '/servers', { ip: '127.0.0.1', name: 'relayed', engine_endpoint: `unix://${relayPath}` });
    expect(await api.ok('POST', `/servers/${serverUuid}/validate`)).toMatchObject({ is_reachable: true });
    const dest = (await api.ok('POST', `/servers/${serverUuid}/destinations`, { network: 'none' })).uuid as string;
    const uuid = await app('behind-relay', SLEEPER_IMAGE, serverUuid, dest);
    expect((await deployment(uuid)).status).toBe('finished');
    expect(containerState(engines, 'a', uuid)!.running).toBe(true);

    // Cut the relay: the status says so instead of keeping its last word.
    // close() calls back once every connection has ended: end them first.
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const c of sockets) c.destroy();
    await closed;
    fs.rmSync(relayPath, { force: true });
    await until('the status says unreachable', async () => ((await api.ok('GET', `/applications/${uuid}`)).status === 'unreachable:unknown' ? true : undefined), 15_000, 200);

    const del = await api.ok('DELETE', `/applications/${uuid}`);
    expect(del.message).toMatch(/could not be reached/);
    expect((await api.ok('GET', `/applications/${uuid}`)).status).toBe('deleting');
    expect((await api.req('POST', `/applications/${uuid}/start`)).status).toBe(409);
    // The container is still there, and its record says it is being deleted: not an orphan.
    expect(containerState(engines, 'a', uuid)).not.toBeNull();
    const orphans = await api.ok('GET', `/servers/${p.serverA}/orphans`);
    expect(orphans.containers.map((c: { name: string }) => c.name)).not.toContain(uuid);

    server = await relay();
    await until('the delete is finished', async () => ((await api.req('GET', `/applications/${uuid}`)).status === 404 ? true : undefined), 30_000, 250);
    expect(containerState(engines, 'a', uuid)).toBeNull();
    const closedAgain = new Promise<void>((r) => server.close(() => r()));
    for (const c of sockets) c.destroy();
    await closedAgain;
    fs.rmSync(dir, { recursive: true, force: true });
  }, 90_000);
});
