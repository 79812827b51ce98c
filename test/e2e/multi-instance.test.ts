/**
 * Three `berth serve` processes on one store (the PostgreSQL database on a PostgreSQL run, the
 * SQLite file otherwise) and one Redis, as behind a load balancer: a record made through one is
 * on the others, a revocation, a member's removal, a role change, the API switch, the allow-list
 * and changes made with plain SQL apply on every instance at the next request (also under load:
 * instances reuse the auth rows while the store says nothing changed), and a migration whose instance is killed (SIGKILL) in the
 * middle of its copy is rolled back by another instance once its lease runs out, with the data
 * verified where the record says the resource lives. (Exact rate limits across three processes:
 * test/limits/redis.test.ts, on both stores.)
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { openStore, type Db } from '../../src/store/db.js';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { call, tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';
import {
  Api,
  containersLabelled,
  containerState,
  deployAppWithVolume,
  ensureSleeperImage,
  KNOWN_FILES,
  migrationEnded,
  registerEngines,
  until,
  volumeNames,
  volumesLabelled,
  volumeTruth,
  writeVolume,
} from './support.js';

const LEASE_MS = 2_000;

describe.runIf(hasRedis)('three berth instances on one store and one Redis', () => {
  let redis: { url: string; stop: () => void };
  let dataDir: string;
  let db: Db;
  let owner: { token: string; teamId: number; email: string };
  let instances: ServeProcess[] = [];
  const env = (extra: Record<string, string> = {}) => ({
    REDIS_URL: redis.url,
    BERTH_JOB_LEASE_MS: String(LEASE_MS),
    BERTH_HELPER_IMAGE: ENGINE_IMAGE,
    API_RATE_LIMIT: '0',
    LOG_LEVEL: 'warn',
    ...extra,
  });
  const get = (i: number, path: string, token = owner.token) => call(instances[i]!.url, 'GET', path, { token });

  beforeAll(async () => {
    redis = await startRedis();
    dataDir = tempDir('berth-multi-');
    db = await openStore(dataDir, storeUrlFor(dataDir));
    const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
    owner = { token: init.token, teamId: init.team.id, email: init.user.email };
    instances = await Promise.all([spawnServe(dataDir, env()), spawnServe(dataDir, env()), spawnServe(dataDir, env())]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await db?.destroy();
    redis?.stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a record made through one instance is the same on the others', async () => {
    const made = await call(instances[0]!.url, 'POST', '/api/v1/projects', { token: owner.token, body: { name: 'shared' } });
    expect(made.status).toBe(201);
    const seen = await Promise.all([0, 1, 2].map((i) => get(i, `/api/v1/projects/${made.json.uuid}`)));
    for (const r of seen) expect(r.json).toEqual(seen[0]!.json);
    expect(seen[0]!.json).toMatchObject({ uuid: made.json.uuid, name: 'shared' });
  });

  it('a revoked token and a removed member stop working on every instance at the next request', async () => {
    const member = `member-${Date.now()}@example.test`;
    await admin.createUser(db, { email: member });
    await admin.addMember(db, { team: String(owner.teamId), email: member, role: 'member' });
    const a = await admin.createToken(db, { email: member, team: String(owner.teamId), name: 'a', permissions: ['read'], expires: 'never' });
    const b = await admin.createToken(db, { email: member, team: String(owner.teamId), name: 'b', permissions: ['read'], expires: 'never' });
    for (const i of [0, 1, 2]) {
      expect((await get(i, '/api/v1/teams/current', a.token)).status).toBe(200);
      expect((await get(i, '/api/v1/teams/current', b.token)).status).toBe(200);
    }
    await admin.revokeToken(db, a.id);
    for (const i of [2, 1, 0]) expect((await get(i, '/api/v1/teams/current', a.token)).status).toBe(401);
    await admin.removeMember(db, { team: String(owner.teamId), email: member });
    for (const i of [1, 0, 2]) expect((await get(i, '/api/v1/teams/current', b.token)).status).toBe(401);
  });

  it('the API switch and the allow-list changed through one instance apply on the others at once', async () => {
    expect((await call(instances[0]!.url, 'POST', '/api/v1/disable', { token: owner.token })).status).toBe(200);
    for (const i of [1, 2]) expect((await get(i, '/api/v1/teams/current')).json).toEqual({ message: 'API is disabled.' });
    expect((await call(instances[1]!.url, 'POST', '/api/v1/enable', { token: owner.token })).status).toBe(200);
    for (const i of [0, 2]) expect((await get(i, '/api/v1/teams/current')).status).toBe(200);

    expect((await call(instances[2]!.url, 'PATCH', '/api/v1/settings', { token: owner.token, body: { allowed_ips: '10.9.9.9' } })).status).toBe(200);
    for (const i of [0, 1]) expect((await get(i, '/api/v1/teams/current')).status).toBe(403);
    // The allow-list is edited from the host (the CLI's store) once no address may call.
    const { writeSettings } = await import('../../src/store/settings.js');
    await writeSettings(db, { allowedIps: '' });
    for (const i of [0, 1, 2]) expect((await get(i, '/api/v1/teams/current')).status).toBe(200);
  });

  it('a role change applies on every instance at the next request (roles cap a token at use)', async () => {
    const admin2 = `admin-${Date.now()}@example.test`;
    await admin.createUser(db, { email: admin2 });
    await admin.addMember(db, { team: String(owner.teamId), email: admin2, role: 'admin' });
    const t = await admin.createToken(db, { email: admin2, team: String(owner.teamId), name: 'r', permissions: ['root'], expires: 'never' });
    for (const i of [0, 1, 2]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(200);
    // A member may not hold root: the token keeps nothing, and reading needs read.
    await admin.addMember(db, { team: String(owner.teamId), email: admin2, role: 'member' });
    for (const i of [2, 0, 1]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(403);
    await admin.addMember(db, { team: String(owner.teamId), email: admin2, role: 'owner' });
    for (const i of [1, 2, 0]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(200);
  });

  it('changes written straight into the store (plain SQL, no berth code) apply at the next request', async () => {
    const who = `sql-${Date.now()}@example.test`;
    await admin.createUser(db, { email: who });
    const team = await admin.createTeam(db, { name: `sql-team-${Date.now()}`, owner: who });
    const t = await admin.createToken(db, { email: who, team: String(team.id), name: 's', permissions: ['read'], expires: 'never' });
    for (const i of [0, 1, 2]) expect((await get(i, '/api/v1/teams/current', t.token)).json).toMatchObject({ id: team.id });

    await db.updateTable('teams').set({ name: 'renamed by SQL' }).where('id', '=', team.id).execute();
    for (const i of [0, 1, 2]) expect((await get(i, '/api/v1/teams/current', t.token)).json).toMatchObject({ name: 'renamed by SQL' });
    await db.updateTable('api_tokens').set({ permissions: '["write"]' }).where('id', '=', t.id).execute();
    for (const i of [1, 2, 0]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(403);
    await db.updateTable('api_tokens').set({ permissions: '["read"]' }).where('id', '=', t.id).execute();
    for (const i of [2, 0, 1]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(200);
    await db
      .updateTable('api_tokens')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', t.id)
      .execute();
    for (const i of [0, 1, 2]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(401);
    await db.updateTable('api_tokens').set({ expires_at: null }).where('id', '=', t.id).execute();
    for (const i of [0, 1, 2]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(200);
    await db.updateTable('settings').set({ value: 'false' }).where('key', '=', 'api_enabled').execute();
    for (const i of [1, 0, 2]) expect((await get(i, '/api/v1/teams/current', t.token)).json).toEqual({ message: 'API is disabled.' });
    await db.updateTable('settings').set({ value: 'true' }).where('key', '=', 'api_enabled').execute();
    for (const i of [0, 1, 2]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(200);
    // Deleting the team takes its memberships and tokens with it (foreign-key cascades).
    await db.deleteFrom('teams').where('id', '=', team.id).execute();
    for (const i of [2, 1, 0]) expect((await get(i, '/api/v1/teams/current', t.token)).status).toBe(401);
  });

  it('under load, every request that starts after a revocation is refused, on every instance', async () => {
    const member = `load-${Date.now()}@example.test`;
    await admin.createUser(db, { email: member });
    await admin.addMember(db, { team: String(owner.teamId), email: member, role: 'member' });
    const t = await admin.createToken(db, { email: member, team: String(owner.teamId), name: 'l', permissions: ['read'], expires: 'never' });
    let revokedAt = Infinity;
    const after: number[] = [];
    let okBefore = 0;
    // 8 clients per instance, each sending one request after another, until each has sent 5
    // requests that started after the revocation had been acknowledged.
    const client = async (i: number) => {
      for (let sentAfter = 0; sentAfter < 5; ) {
        const startedAt = performance.now();
        const { status } = await get(i, '/api/v1/teams/current', t.token);
        if (startedAt > revokedAt) {
          after.push(status);
          sentAfter++;
        } else if (status === 200) okBefore++;
      }
    };
    const clients = [0, 1, 2].flatMap((i) => Array.from({ length: 8 }, () => client(i)));
    await until('requests to be served before the revocation', async () => (okBefore >= 48 ? true : undefined), 30_000, 10);
    await admin.revokeToken(db, t.id);
    revokedAt = performance.now();
    await Promise.all(clients);
    expect(after).toHaveLength(3 * 8 * 5);
    expect(new Set(after)).toEqual(new Set([401]));
  });

  it('/api/ready answers READY on each instance', async () => {
    for (const inst of instances) {
      // A store probe that outlasts its bound answers 503 by design (a load balancer asks again):
      // on a loaded machine an instance's first probe after the load test above sometimes does.
      const r = await until(
        'READY',
        async () => {
          const x = await call(inst.url, 'GET', '/api/ready');
          return x.status !== 503 ? x : undefined;
        },
        10_000,
      );
      expect({ status: r.status, text: r.text }).toEqual({ status: 200, text: 'READY' });
    }
  });

  describe.skipIf(!enginesAvailable)('a migration whose instance is killed mid-copy', () => {
    const engines = useEngines();

    it('is rolled back by another instance once the lease runs out; the data is where the record says', async () => {
      ensureSleeperImage(engines);
      // The first instance holds every migration in its copy for a while, so the kill lands there.
      await instances[0]!.stop();
      instances[0] = await spawnServe(dataDir, env({ BERTH_TEST_HOLD_MIGRATION_PHASE: 'pre-copy:20000' }));
      const a = new Api(instances[0]!.url, owner.token);
      const b = new Api(instances[1]!.url, owner.token);
      const p = await registerEngines(b, engines);
      const { uuid, volume } = await deployAppWithVolume(b, p, 'multi-kill');
      writeVolume(engines, 'a', volume, KNOWN_FILES);
      const before = volumeTruth(engines, 'a', volume);

      const r = await a.ok('POST', `/applications/${uuid}/migrate`, { destination_uuid: p.destB });
      const migrationUuid = r.migration_uuid as string;
      await until('the copy to start on the first instance', async () => ((await b.ok('GET', `/migrations/${migrationUuid}`)).progress.phase === 'pre-copy' ? true : undefined), 60_000, 50);
      instances[0]!.proc.kill('SIGKILL');
      await new Promise((res) => (instances[0]!.proc.exitCode !== null || instances[0]!.proc.signalCode !== null ? res(null) : instances[0]!.proc.once('exit', res)));

      // Another instance takes the job over (no restart of the dead one) and rolls it back.
      const m = await migrationEnded(b, migrationUuid, 60_000);
      expect(m.status, JSON.stringify(m)).toBe('failed');
      expect(m.error).toContain('berth stopped during the migration (pre-copy)');
      expect(await b.ok('GET', `/applications/${uuid}`)).toMatchObject({ server_uuid: p.serverA, destination_uuid: p.destA, status: expect.stringMatching(/^running/) });
      expect((await volumeNames(b, 'applications', uuid)).data).toBe(volume);
      expect(volumeTruth(engines, 'a', volume)).toEqual(before);
      expect(containerState(engines, 'a', uuid)).toMatchObject({ running: true });
      expect(volumesLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([]);
      expect(containersLabelled(engines, 'a', `berth.migration=${migrationUuid}`)).toEqual([]);
      expect(containersLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([]);

      // And a new migration through a living instance moves every byte.
      const again = await b.ok('POST', `/applications/${uuid}/migrate`, { destination_uuid: p.destB, wait: true });
      expect(again.status, JSON.stringify(again)).toBe('finished');
      const moved = (await volumeNames(b, 'applications', uuid)).data!;
      expect(volumeTruth(engines, 'b', moved).hashes).toEqual(before.hashes);
      instances[0] = await spawnServe(dataDir, env());
    }, 240_000);

    it('one instance watches each server, and what it sees is what every instance answers', async () => {
      const b = new Api(instances[1]!.url, owner.token);
      const p = await registerEngines(b, engines);
      const { uuid } = await deployAppWithVolume(b, p, 'watched-once');
      const leases = await until(
        'a watcher holds each server',
        async () => {
          const rows = await db
            .selectFrom('engine_watch_leases as l')
            .innerJoin('servers as s', 's.id', 'l.server_id')
            .select(['s.uuid', 'l.lease_owner', 'l.lease_until'])
            .where('s.uuid', 'in', [p.serverA, p.serverB])
            .execute();
          return rows.length === 2 && rows.every((r) => Number(r.lease_until) > Date.now()) ? rows : undefined;
        },
        15_000,
      );
      expect(new Set(leases.map((l) => l.uuid))).toEqual(new Set([p.serverA, p.serverB]));
      engines.podman('a', ['rm', '-f', uuid]);
      for (const i of [0, 1, 2]) {
        await until(`instance ${i} answers exited`, async () => ((await get(i, `/api/v1/applications/${uuid}`)).json.status === 'exited' ? true : undefined), 5_000, 100);
      }
    }, 120_000);
  });
});
