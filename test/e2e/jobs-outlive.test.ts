/**
 * Jobs outlive what fails under them, on three `berth serve` processes sharing one store (the
 * PostgreSQL database on a PostgreSQL run, the SQLite file otherwise) and one Redis:
 * - an instance killed (SIGKILL) with two deployments running and one queued: the running ones
 *   are failed once their lease runs out, the queued one runs on another instance, and later
 *   deployments to that server run (a dead instance's slots are never kept: the queue is counted
 *   in the store);
 * - Redis emptied (its keys deleted, then restarted without persistence): the next deployment
 *   runs (the queue keeps nothing in Redis).
 * The engine is a socket that accepts and never answers (a deployment runs until cut), or one
 * nobody listens on (a deployment runs and fails at once).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { openStore, type Db } from '../../src/store/db.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { call, tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';
import { until } from '../helpers/wait.js';

const LEASE_MS = 2_000;

describe.runIf(hasRedis)('jobs on three instances sharing a store and Redis', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let again: ChildProcess | undefined;
  let dataDir: string;
  let db: Db;
  let token: string;
  let hung: net.Server;
  const held = new Set<net.Socket>();
  let instances: ServeProcess[] = [];
  let project: string;
  const env = () => ({ REDIS_URL: redis.url, BERTH_JOB_LEASE_MS: String(LEASE_MS), BERTH_QUEUE_CONCURRENCY: '2', API_RATE_LIMIT: '0', LOG_LEVEL: 'warn' });
  const api = async (i: number, method: string, p: string, body?: unknown) => {
    const r = await call(instances[i]!.url, method, `/api/v1${p}`, { token, body });
    if (r.status >= 300) throw new Error(`${method} ${p} on instance ${i}: ${r.status} ${r.text}`);
    return r.json;
  };
  const row = (uuid: string) => db.selectFrom('deployments').select(['status', 'lease_owner', 'lease_until']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
  async function app(i: number, server: string, name: string): Promise<string> {
    return (await api(i, 'POST', '/applications/dockerimage', { project_uuid: project, server_uuid: server, environment_name: 'production', docker_registry_image_name: 'nginx', name })).uuid;
  }
  const deploy = async (i: number, appUuid: string): Promise<string> => (await api(i, 'POST', `/deploy?uuid=${appUuid}`)).deployments[0].deployment_uuid;

  beforeAll(async () => {
    redis = await startRedis();
    dataDir = tempDir('berth-jobs-');
    const sock = path.join(dataDir, 'hung.sock');
    hung = net.createServer((c) => {
      held.add(c);
      c.on('close', () => held.delete(c));
      c.on('error', () => undefined);
    });
    await new Promise<void>((r) => hung.listen(sock, r));
    db = await openStore(dataDir, storeUrlFor(dataDir));
    token = (await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' })).token;
    instances = await Promise.all([spawnServe(dataDir, env()), spawnServe(dataDir, env()), spawnServe(dataDir, env())]);
    project = (await api(1, 'POST', '/projects', { name: 'jobs' })).uuid;
  }, 90_000);
  afterAll(async () => {
    for (const c of held) c.destroy();
    hung?.close();
    await Promise.all(instances.map((i) => i.stop()));
    await db?.destroy();
    again?.kill();
    redis?.stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('kill -9 with two deployments running and one queued: the queued one runs on another instance, and the server keeps deploying', async () => {
    const server = (await api(0, 'POST', '/servers', { ip: '127.0.0.1', engine_endpoint: `unix://${path.join(dataDir, 'hung.sock')}` })).uuid;
    const apps = [await app(0, server, 'a1'), await app(0, server, 'a2'), await app(0, server, 'a3'), await app(1, server, 'a4')];
    const first = [await deploy(0, apps[0]!), await deploy(0, apps[1]!), await deploy(0, apps[2]!)];
    const x = (await row(first[0]!)).lease_owner;
    await until(
      'two running and one queued on the first instance',
      async () => {
        const rows = await Promise.all(first.map(row));
        return rows.map((r) => r.status).join() === 'in_progress,in_progress,queued' && rows.every((r) => r.lease_owner === x) ? rows : undefined;
      },
      20_000,
    );

    instances[0]!.proc.kill('SIGKILL');
    await new Promise((res) => (instances[0]!.proc.exitCode !== null || instances[0]!.proc.signalCode !== null ? res(null) : instances[0]!.proc.once('exit', res)));
    const killedAt = Date.now();

    // The two cut off are failed; the queued one runs on a living instance.
    for (const uuid of first.slice(0, 2)) await until(`${uuid} failed`, async () => ((await row(uuid)).status === 'failed' ? true : undefined), 30_000);
    const taken = await until(
      'the queued one to run elsewhere',
      async () => {
        const r = await row(first[2]!);
        return r.status === 'in_progress' ? r : undefined;
      },
      30_000,
    );
    expect(taken.lease_owner).not.toBe(x);
    // Loosely "within the lease" (the sweep runs every third of one): seconds, not for good.
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    // The server's queue holds no dead instance's slots: one more deployment (through another
    // instance) takes the second slot.
    const later = await deploy(2, apps[3]!);
    await until('a later deployment to run', async () => ((await row(later)).status === 'in_progress' ? true : undefined), 20_000);

    // Take the engine away: the hung deployments fail and free their slots.
    hung.close();
    for (const c of held) c.destroy();
    for (const uuid of [first[2]!, later]) await until(`${uuid} to end`, async () => (['failed', 'finished'].includes((await row(uuid)).status) ? true : undefined), 30_000);
    instances[0] = await spawnServe(dataDir, env());
  }, 180_000);

  it('Redis emptied, then restarted without persistence: the next deployment runs', async () => {
    // An engine nobody listens on: a deployment runs and fails at once, which is all this needs.
    const server = (await api(1, 'POST', '/servers', { ip: '127.0.0.1', engine_endpoint: `unix://${path.join(dataDir, 'nobody.sock')}` })).uuid;
    const appUuid = await app(1, server, 'r1');
    const ended = async (uuid: string) => until(`${uuid} to run`, async () => ((await row(uuid)).status === 'failed' ? true : undefined), 20_000);
    await ended(await deploy(1, appUuid));

    const probe = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    await probe.flushall();
    await probe.quit();
    await ended(await deploy(2, appUuid));

    redis.stop();
    const port = new URL(redis.url).port;
    await until('Redis to be gone', async () => ((await call(instances[1]!.url, 'GET', '/api/ready')).status === 503 ? true : undefined), 10_000);
    again = spawn('redis-server', ['--port', port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (const i of [0, 1, 2]) await until(`instance ${i} ready again`, async () => ((await call(instances[i]!.url, 'GET', '/api/ready')).text === 'READY' ? true : undefined), 20_000);
    for (const i of [0, 1, 2]) await ended(await deploy(i, appUuid));
  }, 120_000);
});
