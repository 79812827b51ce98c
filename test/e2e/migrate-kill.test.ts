/**
 * End to end, on two real engines, with berth as a real `berth serve` process: SIGKILL in each
 * phase of a live migration (pre-copy while the app runs, the final pass after its stop, the
 * verification, the switch) leaves the old state (records on a, source intact, nothing switched
 * in); a restart on the same data directory rolls back: the app runs on a again, nothing of the
 * migration is left on b, and a new migration then moves every byte. A migration that fails rolls
 * back the same way. A kill right after the switch's commit leaves the move standing, and the
 * restart removes what the dead instance would have: the copy's helpers on both servers, the
 * source's container and volume.
 */
import fs from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { openStore } from '../../src/store/db.js';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';
import {
  Api,
  containersLabelled,
  containerState,
  deploymentCount,
  ensureSleeperImage,
  KNOWN_FILES,
  LARGE_MIXED,
  migrationEnded,
  registerEngines,
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

/**
 * Size of the large volume (MiB): mixed files (8 MiB, 256 KiB, 1–64 KiB) over many rounds of the
 * copy's stream. The kill itself lands by the phase hold, not by the copy's length, so the size
 * only has to make the re-run move more than one of everything (bench/migrate covers big sizes).
 */
const LARGE_MIB = Number(process.env.BERTH_E2E_KILL_MIB ?? 64);

/**
 * On PostgreSQL this file proves the store's part, the dead instance's claim and lease on the job
 * and the rollback's writes, with one kill (in the switch, the phase closest to the records), and
 * the sweep of a switched migration's leftovers (the kill after the switch); the
 * other phases and the data checks run on SQLite, where the engines and volumes are the same.
 * (All of them on both stores took 9 minutes of the PostgreSQL half, the longest file by far.)
 */
const PHASES = TEST_STORE === 'postgres' ? (['switch'] as const) : (['pre-copy', 'final-sync', 'verify', 'switch'] as const);

describe.skipIf(!enginesAvailable)('killing berth in the middle of a migration', () => {
  const engines = useEngines();
  let dataDir: string;
  let token: string;
  let serve: ServeProcess | undefined;
  let api: Api;
  let p: Platform;

  /** A phase of the copy, or `done`: the switch committed, its helpers and leftovers not yet removed. */
  type Phase = (typeof PHASES)[number] | 'done';
  const env = (helperImage = ENGINE_IMAGE) => ({ BERTH_HELPER_IMAGE: helperImage, LOG_LEVEL: 'warn', API_RATE_LIMIT: '0', BERTH_JOB_LEASE_MS: '2000' });
  /** The phase the running berth holds a migration in (test hook), if any. */
  let holding: Phase | undefined;
  /**
   * A new berth on the same data directory. `hold`: it holds every migration for 20 s when it
   * enters that phase (BERTH_TEST_HOLD_MIGRATION_PHASE), so even a phase of milliseconds can be
   * hit; it changes nothing else, so a restart may already hold the next case's phase (one
   * berth start fewer per case).
   */
  const alive = () => serve !== undefined && serve.proc.exitCode === null && serve.proc.signalCode === null;
  async function restart(helperImage?: string, extra: Record<string, string> = {}, hold?: Phase): Promise<void> {
    if (alive()) await serve!.stop();
    serve = await spawnServe(dataDir, { ...env(helperImage), ...(hold ? { BERTH_TEST_HOLD_MIGRATION_PHASE: `${hold}:20000` } : {}), ...extra });
    holding = hold;
    api = new Api(serve.url, token);
  }

  beforeAll(async () => {
    ensureSleeperImage(engines);
    dataDir = tempDir('berth-e2e-kill-');
    const db = await openStore(dataDir, storeUrlFor(dataDir));
    token = (await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' })).token;
    await db.destroy();
    await restart(undefined, {}, PHASES[0]);
    p = await registerEngines(api, engines);
  }, 60_000);
  afterEach((ctx) => {
    // A berth that died on its own (not killed by the test) says why in its output.
    if (ctx.task.result?.state === 'fail' && serve) console.error(`berth serve output:\n${serve.output().slice(-4000)}`);
  });
  afterAll(async () => {
    if (serve && serve.proc.exitCode === null && serve.proc.signalCode === null) await serve.stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function runningApp(name: string, fill: (volume: string) => void): Promise<{ uuid: string; volume: string; before: VolumeTruth }> {
    const { uuid, volume } = await deployAppWithVolume(api, p, name);
    expect(containerState(engines, 'a', uuid)).toMatchObject({ running: true });
    fill(volume);
    return { uuid, volume, before: volumeTruth(engines, 'a', volume) };
  }

  /** What the store says, read directly (berth may be dead). */
  async function stored(appUuid: string, migrationUuid: string) {
    const db = await openStore(dataDir, storeUrlFor(dataDir));
    try {
      const r = await db
        .selectFrom('resources as r')
        .innerJoin('destinations as d', 'd.id', 'r.destination_id')
        .select(['r.id', 'r.status', 'd.uuid as destination'])
        .where('r.uuid', '=', appUuid)
        .executeTakeFirstOrThrow();
      const storages = await db.selectFrom('storages').select(['name', 'engine_volume']).where('resource_id', '=', r.id).execute();
      const m = await db.selectFrom('migrations_jobs').select(['status', 'progress']).where('uuid', '=', migrationUuid).executeTakeFirstOrThrow();
      return { status: r.status, destination: r.destination, storages, migration: { status: m.status, progress: JSON.parse(m.progress) } };
    } finally {
      await db.destroy();
    }
  }

  /** Records on b, the moved volume byte for byte the source, the source intact, nothing left over. */
  async function expectMoved(app: { uuid: string; volume: string; before: VolumeTruth }, migrationUuid: string): Promise<void> {
    expect(await api.ok('GET', `/applications/${app.uuid}`)).toMatchObject({ server_uuid: p.serverB, destination_uuid: p.destB, status: 'exited' });
    const moved = (await volumeNames(api, 'applications', app.uuid)).data!;
    expect(moved).not.toBe(app.volume);
    const after = volumeTruth(engines, 'b', moved);
    expect(after.files).toBe(app.before.files);
    expect(after.bytes).toBe(app.before.bytes);
    for (const [file, sum] of app.before.hashes) expect(after.hashes.get(file), file).toBe(sum);
    expect(after.listing).toBe(app.before.listing);
    // The source's copy and container go once the move is done (nothing left behind on a).
    await until('the source cleared', async () => (!volumeExists(engines, 'a', app.volume) && containerState(engines, 'a', app.uuid) === null ? true : undefined), 20_000);
    // Exactly the switched-in copy is left of this migration on b; no helper containers anywhere.
    expect(volumesLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([moved]);
    expect(containersLabelled(engines, 'a', `berth.migration=${migrationUuid}`)).toEqual([]);
    expect(containersLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([]);
    expect(containerState(engines, 'b', app.uuid)).toBeNull();
  }

  /** Records on a, the source intact, nothing of this migration left on b. */
  async function expectRolledBack(app: { uuid: string; volume: string; before: VolumeTruth }, migrationUuid: string): Promise<void> {
    // Back as it was before the migration: on a, running again, on its untouched volume.
    expect(await api.ok('GET', `/applications/${app.uuid}`)).toMatchObject({ server_uuid: p.serverA, destination_uuid: p.destA, status: 'running:unknown' });
    expect(containerState(engines, 'a', app.uuid)).toMatchObject({ running: true });
    expect((await volumeNames(api, 'applications', app.uuid)).data).toBe(app.volume);
    expect(volumeTruth(engines, 'a', app.volume)).toEqual(app.before);
    expect(volumesLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([]);
    expect(containersLabelled(engines, 'a', `berth.migration=${migrationUuid}`)).toEqual([]);
    expect(containersLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([]);
  }

  /**
   * Kills berth outright once a migration is in `phase` (held there by a berth started with that
   * hold), then checks the store and the engines while it is dead, restarts it (holding `next`,
   * the next case's phase, if any) and checks where everything ends.
   */
  async function killIn(phase: Phase, fill: (volume: string) => void, next?: Phase) {
    if (holding !== phase || !alive()) await restart(ENGINE_IMAGE, {}, phase);
    const app = await runningApp(`kill-${phase}`, fill);
    const deploymentsBefore = await deploymentCount(api, app.uuid);
    const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB });
    expect(r).toMatchObject({ moves_data: true, status: 'pending' });
    const migrationUuid = r.migration_uuid as string;
    await until(
      `the migration to reach ${phase}`,
      async () => {
        const m = await api.ok('GET', `/migrations/${migrationUuid}`);
        expect(['pending', 'copying']).toContain(m.status);
        return m.progress.phase === phase ? m : undefined;
      },
      90_000,
      50,
    );
    serve!.proc.kill('SIGKILL');
    await new Promise((res) => (serve!.proc.exitCode !== null || serve!.proc.signalCode !== null ? res(null) : serve!.proc.once('exit', res)));
    expect(serve!.proc.signalCode).toBe('SIGKILL');

    // Dead berth: the records still say a, the source volume is untouched, nothing switched in.
    const dead = await stored(app.uuid, migrationUuid);
    expect(dead).toMatchObject({ status: 'migrating', destination: p.destA, storages: [{ name: 'data', engine_volume: null }] });
    expect(dead.migration).toMatchObject({ status: 'copying', progress: { phase } });
    expect(volumeTruth(engines, 'a', app.volume)).toEqual(app.before);
    // Running on a until the last pass; stopped for it. Never started on b.
    expect(containerState(engines, 'a', app.uuid)).toMatchObject({ running: phase === 'pre-copy' });
    expect(containerState(engines, 'b', app.uuid)).toBeNull();

    // A restart rolls it back: failed, saying why; running again on a with its data; nothing left on b.
    await restart(ENGINE_IMAGE, {}, next);
    const m = await migrationEnded(api, migrationUuid, 60_000);
    expect(m.status, JSON.stringify(m)).toBe('failed');
    expect(m.error).toContain(`berth stopped during the migration (${phase})`);
    await expectRolledBack(app, migrationUuid);
    expect(await deploymentCount(api, app.uuid)).toBe(deploymentsBefore);
    return app;
  }

  for (const [i, phase] of PHASES.entries()) {
    // The last phase's restart holds the next case's phase.
    const next = PHASES[i + 1] ?? 'done';
    it(`SIGKILL in ${phase}: the records and data stay on a, and a restart rolls back to a running app on a`, async () => {
      await killIn(phase, (v) => writeVolume(engines, 'a', v, KNOWN_FILES, ['2']), next);
    }, 180_000);
  }

  it("SIGKILL after the switch, before its helpers go: a restart removes them from both servers, and the source's leftovers", async () => {
    if (holding !== 'done' || !alive()) await restart(ENGINE_IMAGE, {}, 'done');
    const app = await runningApp('kill-done', (v) => writeVolume(engines, 'a', v, KNOWN_FILES, ['2']));
    const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB });
    const migrationUuid = r.migration_uuid as string;
    const label = `berth.migration=${migrationUuid}`;
    await until('the switch to commit', async () => ((await api.ok('GET', `/migrations/${migrationUuid}`)).status === 'finished' ? true : undefined), 90_000, 50);
    serve!.proc.kill('SIGKILL');
    await new Promise((res) => (serve!.proc.exitCode !== null || serve!.proc.signalCode !== null ? res(null) : serve!.proc.once('exit', res)));
    // The window this covers: switched, and the copy's helpers still on both servers.
    expect((await stored(app.uuid, migrationUuid)).destination).toBe(p.destB);
    expect(containersLabelled(engines, 'a', label)).not.toEqual([]);
    expect(containersLabelled(engines, 'b', label)).not.toEqual([]);

    // The large case's pre-copy held next (SQLite's run only).
    await restart(ENGINE_IMAGE, {}, TEST_STORE === 'postgres' ? undefined : 'pre-copy');
    await until('the helpers removed', async () => (containersLabelled(engines, 'a', label).length + containersLabelled(engines, 'b', label).length === 0 ? true : undefined), 60_000);
    await expectMoved(app, migrationUuid);
  }, 180_000);

  // Store-independent (engines and bytes), so SQLite's run only: see PHASES.
  if (TEST_STORE === 'postgres') return;

  it(`after a rollback, a new migration of the same ${LARGE_MIB} MiB moves every byte`, async () => {
    const app = await killIn('pre-copy', (v) => writeVolume(engines, 'a', v, LARGE_MIXED, [String(LARGE_MIB)]));
    const again = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB });
    const m = await migrationEnded(api, again.migration_uuid, 150_000);
    expect(m.status, JSON.stringify(m)).toBe('finished');
    await expectMoved(app, again.migration_uuid);
  }, 300_000);

  it('a failed migration rolls back (nothing staged left on b); a re-run of migrate then moves every byte', async () => {
    const app = await runningApp('rerun-app', (v) => writeVolume(engines, 'a', v, KNOWN_FILES, ['2']));

    // A helper image no engine has (and no registry to pull it from): the copy cannot start.
    await restart('localhost/berth-missing-helper:latest');
    const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB });
    const failed = await migrationEnded(api, r.migration_uuid, 60_000);
    expect(failed.status, JSON.stringify(failed)).toBe('failed');
    expect(failed.error).toMatch(/berth-missing-helper/);
    await expectRolledBack(app, r.migration_uuid);

    await restart();
    // The failed job stays failed after a restart; a new migrate starts afresh.
    expect((await api.ok('GET', `/migrations/${r.migration_uuid}`)).status).toBe('failed');
    const again = await api.req('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB });
    expect(again.status, again.text).toBe(200);
    expect(again.json.migration_uuid).not.toBe(r.migration_uuid);
    const m = await migrationEnded(api, again.json.migration_uuid, 60_000);
    expect(m.status, JSON.stringify(m)).toBe('finished');
    await expectMoved(app, again.json.migration_uuid);
    // The failed attempt left nothing behind on b either.
    expect(volumesLabelled(engines, 'b', `berth.migration=${r.migration_uuid}`)).toEqual([]);
  }, 240_000);
});
