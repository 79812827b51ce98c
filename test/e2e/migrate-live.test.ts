/**
 * Live migration end to end on two real engines: an application that keeps writing to its volume
 * (log appends, a rewritten state file, temporary files made and removed, in-place writes into a
 * large file) is migrated while it runs. It keeps running through the copy rounds, is stopped only
 * for the last pass, and the copy on b is exactly what the source held at the stop; the pause is
 * recorded (downtime_ms) and shorter than the whole migration. Cancel stops a migration before
 * its switch and leaves the app running where it was, with nothing left on b.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_TIMING } from '../../src/console/live/stream.js';
import { signInByLink } from '../helpers/console.js';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';
import {
  Api,
  containersLabelled,
  containerState,
  deployAppWithVolume,
  deployed,
  ensureWriterImage,
  migrationEnded,
  registerEngines,
  sumsInContainer,
  until,
  volumeNames,
  volumesLabelled,
  volumeTruth,
  writeVolume,
  WRITER_IMAGE,
  type Platform,
} from './support.js';

describe.skipIf(!enginesAvailable)('live migration of an application that keeps writing', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    ensureWriterImage(engines);
    s = await startTestServer({ helperImage: ENGINE_IMAGE, apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  /**
   * Deletes a writer app: left running, it would fork four processes every 20 ms on the run's
   * shared engines for the rest of the suite (measured: minutes of CPU).
   */
  async function stopWriter(uuid: string, on: 'a' | 'b') {
    await api.ok('DELETE', `/applications/${uuid}`);
    await until('the writer gone', async () => (containerState(engines, on, uuid) === null ? true : undefined), 30_000);
  }

  async function writingApp(name: string, mib: number) {
    const app = await deployAppWithVolume(api, p, name, WRITER_IMAGE);
    writeVolume(engines, 'a', app.volume, `dd if=/dev/urandom of=/data/big.bin bs=1048576 count=${mib} 2>/dev/null`);
    await until('the writer to write', async () => (Number(engines.podman('a', ['exec', app.uuid, 'sh', '-c', 'wc -l < /data/logs/app.log']).trim()) > 20 ? true : undefined), 20_000);
    return app;
  }

  it('runs during the copy rounds, stops only for the last pass; b holds exactly what a held at the stop; the pause is recorded', async () => {
    const app = await writingApp('live-writer', 96);
    // A person watches the migration's console page (its event stream) from the start.
    const owner = await signInByLink(s.url, s.db, s.ownerEmail);
    const savedPoll = LIVE_TIMING.pollMs;
    LIVE_TIMING.pollMs = 200;
    const started = Date.now();
    // The source copy is kept, to compare the target with what a held at the stop.
    const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB, keep_source_volumes: true });
    const watch = await openSse(`${s.url}/migrations/${r.migration_uuid}/events`, owner.cookie);
    LIVE_TIMING.pollMs = savedPoll;
    expect(r).toMatchObject({ moves_data: true, status: 'pending' });
    expect(r.message).toMatch(/while it runs/);

    // While rounds run the app is still running on a and still writing.
    const during = await until(
      'a copy round to run',
      async () => {
        const m = await api.ok('GET', `/migrations/${r.migration_uuid}`);
        return m.progress.phase === 'pre-copy' && m.progress.round >= 1 ? m : undefined;
      },
      60_000,
      20,
    );
    expect(during.status).toBe('copying');
    expect(containerState(engines, 'a', app.uuid)).toMatchObject({ running: true });

    const m = await migrationEnded(api, r.migration_uuid, 120_000);
    const total = Date.now() - started;
    expect(m, JSON.stringify(m)).toMatchObject({ status: 'finished', error: null, progress: { phase: 'done', volumes_done: 1 } });
    expect(m.progress.round).toBeGreaterThanOrEqual(2);
    expect(m.downtime_ms).toBeGreaterThan(0);
    expect(m.downtime_ms).toBeLessThan(total);

    // The page saw it happen: the copy while it ran, bytes growing, then the phase, bytes and pause recorded.
    await watch.next((e) => e.event === 'end', 10_000);
    const shown = watch.events.filter((e) => e.event === 'state').map((e) => e.data.text as Record<string, string>);
    expect(shown.some((t) => t.status === 'copying' && t.phase === 'pre-copy')).toBe(true);
    const bytes = shown.map((t) => Number.parseFloat(t.bytes!)).filter((n) => !Number.isNaN(n));
    expect(new Set(bytes).size).toBeGreaterThan(1);
    expect(bytes).toEqual([...bytes].sort((x, y) => x - y));
    expect(shown.at(-1)).toMatchObject({ status: 'finished', phase: 'done', bytes: `${(m.progress.bytes / 1048576).toFixed(1)} MiB`, downtime: `${(m.downtime_ms / 1000).toFixed(1)} s` });
    expect(watch.events.at(-1)).toEqual({ event: 'end', data: { reason: 'finished' } });

    // Gone from a, not started on b; a's kept volume is frozen at the stop, and b has exactly it.
    await until('the source container removed', async () => (containerState(engines, 'a', app.uuid) === null ? true : undefined), 20_000);
    expect(containerState(engines, 'b', app.uuid)).toBeNull();
    const moved = (await volumeNames(api, 'applications', app.uuid)).data!;
    const source = volumeTruth(engines, 'a', app.volume);
    const copy = volumeTruth(engines, 'b', moved);
    expect(copy.listing).toBe(source.listing);
    expect(copy.sums).toBe(source.sums);
    expect(source.listing).toContain('./logs/app.log|');
    expect(containersLabelled(engines, 'a', `berth.migration=${r.migration_uuid}`)).toEqual([]);
    expect(containersLabelled(engines, 'b', `berth.migration=${r.migration_uuid}`)).toEqual([]);

    // Redeployed on b, it carries on from the copied log.
    const lines = Number(engines.podman('b', ['run', '--rm', '-v', `${moved}:/data:ro`, ENGINE_IMAGE, 'sh', '-c', 'wc -l < /data/logs/app.log']).trim());
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${app.uuid}`)).deployments[0].deployment_uuid);
    await until('the app to write on b', async () => (Number(engines.podman('b', ['exec', app.uuid, 'sh', '-c', 'wc -l < /data/logs/app.log']).trim()) > lines ? true : undefined), 20_000);
    expect(sumsInContainer(engines, 'b', app.uuid, '/data/logs')).toContain('app.log');
    await stopWriter(app.uuid, 'b');
  }, 300_000);

  it('cancel before the switch: the copy stops, nothing stays on b, the app keeps running on a with its volume; a second cancel is 409', async () => {
    const app = await writingApp('cancelled-writer', 256);
    const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB });
    await until(
      'bytes moving',
      async () => {
        const m = await api.ok('GET', `/migrations/${r.migration_uuid}`);
        return m.status === 'copying' && m.progress.bytes > 0 ? m : undefined;
      },
      60_000,
      20,
    );
    const c = await api.req('POST', `/migrations/${r.migration_uuid}/cancel`);
    expect(c.status, c.text).toBe(200);
    expect(c.json).toEqual({ message: 'Migration cancelled; the resource stays where it was.' });

    const m = await migrationEnded(api, r.migration_uuid, 60_000);
    expect(m).toMatchObject({ status: 'cancelled', downtime_ms: null });
    expect(await api.ok('GET', `/applications/${app.uuid}`)).toMatchObject({ server_uuid: p.serverA, destination_uuid: p.destA, status: 'running:unknown' });
    expect((await volumeNames(api, 'applications', app.uuid)).data).toBe(app.volume);
    expect(containerState(engines, 'a', app.uuid)).toMatchObject({ running: true });
    expect(volumesLabelled(engines, 'b', `berth.migration=${r.migration_uuid}`)).toEqual([]);
    await until(
      'helpers removed',
      async () =>
        containersLabelled(engines, 'a', `berth.migration=${r.migration_uuid}`).length + containersLabelled(engines, 'b', `berth.migration=${r.migration_uuid}`).length === 0 ? true : undefined,
      20_000,
    );

    const again = await api.req('POST', `/migrations/${r.migration_uuid}/cancel`);
    expect(again.status).toBe(409);
    expect(again.json.message).toMatch(/cancelled and can no longer be cancelled/);
    // Another team's token sees the same 404 as for a missing migration.
    const other = await s.team('Other');
    const foreign = await new Api(s.url, other.rootToken).req('POST', `/migrations/${r.migration_uuid}/cancel`);
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe('{"message":"Resource not found."}');
    await stopWriter(app.uuid, 'a');
  }, 300_000);
});
