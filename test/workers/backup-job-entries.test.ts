/**
 * The audit log's `job` door for scheduled backups (issue 26): the end of every scheduled run of a
 * database backup and of a volume (storage) backup is exactly one entry, written with the run's
 * move out of `running`, attributed to whoever last set the schedule, naming the resource, the
 * schedule and the run. Two instances (two runners, on PostgreSQL two pools) ticking at the same
 * moment still write one. On a record-only server (no engine), so every run fails: the entry
 * says so. A successful scheduled run on a real engine: test/e2e/backups.test.ts.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordOnlyRuntime } from '../../src/core/runtime.js';
import { openStore, type Db } from '../../src/store/db.js';
import { BackupRunner } from '../../src/workers/database-backup-runner.js';
import { VolumeBackupRunner } from '../../src/workers/volume-backup-runner.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';
import { until } from '../helpers/wait.js';

let s: TestServer;
let database: string;
let storage: string;
let owner: number;
let rootTokenId: number;
const handles: Db[] = [];

const api = async (method: string, path: string, body?: unknown, token = s.rootToken) => {
  const r = await call(s.url, method, `/api/v1${path}`, { token, body });
  expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(300);
  return r.json;
};

beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0 });
  const server = await api('POST', '/servers', { name: 'records', ip: '10.0.0.9' });
  const project = await api('POST', '/projects', { name: 'backups' });
  database = (await api('POST', '/databases/postgresql', { project_uuid: project.uuid, server_uuid: server.uuid, environment_name: 'production' })).uuid;
  storage = (await api('GET', `/databases/${database}/storages`)).persistent_storages[0].uuid;
  owner = (await s.db.selectFrom('users').select('id').where('email', '=', s.ownerEmail).executeTakeFirstOrThrow()).id;
  rootTokenId = Number(s.rootToken.split('|')[0]);
});
afterAll(async () => {
  for (const h of handles) await h.destroy();
  await s.stop();
});

/**
 * A store handle as another instance has it: on PostgreSQL a pool of its own, so two runners'
 * claims and ends really race; on SQLite instances are processes, and two handles in one process
 * would wait on each other's write lock synchronously, so they share the test's (their steps then
 * interleave at every await instead).
 */
async function instanceDb(): Promise<Db> {
  if (TEST_STORE !== 'postgres') return s.db;
  const db = await openStore(s.dataDir, storeUrlFor(s.dataDir));
  handles.push(db);
  return db;
}
const silent = pino({ level: 'silent' });

/** A minute's middle, so its slot of an every-minute schedule is due and the next one is not. */
const minuteAt = (offset: number) => new Date(Math.floor(Date.now() / 60_000) * 60_000 + offset * 60_000 + 30_000);
const slotOf = (now: Date) => new Date(now.getTime() - 30_000).toISOString();

const jobEntries = async (uuid: string) =>
  (await s.db.selectFrom('audit_log').selectAll().where('door', '=', 'job').where('targets', 'like', `%"${uuid}"%`).orderBy('id').execute()).map((e) => ({
    ...e,
    targets: JSON.parse(e.targets),
    arguments: JSON.parse(e.arguments!),
  }));

describe('scheduled backups: one `job` entry per ended run', () => {
  it('database backup: two instances, one failed run, one entry for whoever set the schedule', async () => {
    const writer = await s.token({ permissions: ['read', 'write'], email: `backup-writer-${process.pid}@example.test` });
    const backup = (await api('POST', `/databases/${database}/backups`, { frequency: 'every_minute' })).uuid as string;
    // Made two minutes ago: the current minute's slot is due.
    await s.db
      .updateTable('scheduled_database_backups')
      .set({ created_at: new Date(Date.now() - 120_000).toISOString() })
      .where('uuid', '=', backup)
      .execute();
    const [a, b] = [new BackupRunner(await instanceDb(), recordOnlyRuntime, silent), new BackupRunner(await instanceDb(), recordOnlyRuntime, silent)];
    const runs = () =>
      s.db
        .selectFrom('scheduled_database_backup_executions as e')
        .innerJoin('scheduled_database_backups as b', 'b.id', 'e.backup_id')
        .select(['e.uuid', 'e.status', 'e.scheduled_for'])
        .where('b.uuid', '=', backup)
        .orderBy('e.id')
        .execute();

    const now = minuteAt(0);
    await Promise.all([a.tick(now), b.tick(now), a.tick(now), b.tick(now)]);
    await Promise.all([a.idle(), b.idle()]);
    const [run, ...more] = await runs();
    expect(more).toEqual([]);
    expect(run).toMatchObject({ status: 'failed', scheduled_for: slotOf(now) });
    expect(await jobEntries(backup)).toMatchObject([
      {
        team_id: s.rootTeamId,
        user_id: owner,
        token_id: rootTokenId,
        oauth_client_id: null,
        source_ip: null,
        operation: 'run_database_backup',
        targets: [database, backup],
        arguments: { scheduled_for: slotOf(now) },
        result: 'failed',
        status: 500,
        started_uuid: run!.uuid,
      },
    ]);

    // Another token changes the schedule: the next slot's entry is attributed to it, once.
    await api('PATCH', `/databases/${database}/backups/${backup}`, { database_backup_retention_amount_locally: 4 }, writer.token);
    const next = minuteAt(1);
    await Promise.all([b.tick(next), a.tick(next), b.tick(next)]);
    await Promise.all([a.idle(), b.idle()]);
    const ended = await runs();
    expect(ended.map((r) => r.scheduled_for)).toEqual([slotOf(now), slotOf(next)]);
    const entries = await jobEntries(backup);
    expect(entries.map((e) => [e.token_id, e.user_id, e.started_uuid])).toEqual([
      [rootTokenId, owner, run!.uuid],
      [writer.id, expect.any(Number), ended[1]!.uuid],
    ]);
    expect(entries[1]!.user_id).not.toBe(owner);

    // A run that ends as an orphan (its instance died) is failed by a later tick: still one entry.
    const orphanBackup = await s.db.selectFrom('scheduled_database_backups').select(['id', 'timeout']).where('uuid', '=', backup).executeTakeFirstOrThrow();
    const orphanAt = new Date(Date.now() - orphanBackup.timeout * 1000 - 120_000);
    const orphan = await a.claim(orphanBackup.id, new Date(Math.floor(orphanAt.getTime() / 60_000) * 60_000).toISOString());
    await s.db.updateTable('scheduled_database_backup_executions').set({ created_at: orphanAt.toISOString() }).where('id', '=', orphan!).execute();
    await Promise.all([a.tick(next), b.tick(next)]);
    await Promise.all([a.idle(), b.idle()]);
    const orphanRun = await s.db.selectFrom('scheduled_database_backup_executions').select(['uuid', 'status', 'message']).where('id', '=', orphan!).executeTakeFirstOrThrow();
    expect(orphanRun).toMatchObject({ status: 'failed', message: expect.stringMatching(/^berth stopped during this backup/) });
    expect((await jobEntries(backup)).filter((e) => e.started_uuid === orphanRun.uuid)).toMatchObject([{ result: 'failed', status: 500, token_id: writer.id }]);

    // A run on demand (the server's own runner) is its call's entry, not a job entry.
    const before = (await jobEntries(backup)).length;
    const callEntries = (uuid: string) => s.db.selectFrom('audit_log').select('id').where('door', '=', 'rest').where('targets', 'like', `%"${uuid}"%`).execute();
    const callsBefore = (await callEntries(backup)).length;
    const onDemand = await api('PATCH', `/databases/${database}/backups/${backup}`, { backup_now: true });
    // Only once the run has ended does "no job entry" mean anything.
    const onDemandEnded = await until('the run on demand to end', async () => {
      const e = await s.db.selectFrom('scheduled_database_backup_executions').select('status').where('uuid', '=', onDemand.execution_uuid).executeTakeFirst();
      return e && e.status !== 'running' ? e.status : undefined;
    });
    expect(['success', 'failed']).toContain(onDemandEnded);
    expect((await jobEntries(backup)).length).toBe(before);
    expect((await callEntries(backup)).length).toBe(callsBefore + 1);
  });

  it('volume backup: two instances, one failed run, one entry for whoever set the schedule', async () => {
    const writer = await s.token({ permissions: ['read', 'write'], email: `volume-writer-${process.pid}@example.test` });
    const path = `/databases/${database}/storages/${storage}/backups`;
    const schedule = await api('PUT', path, { frequency: 'every_minute' }, writer.token);
    await s.db
      .updateTable('scheduled_volume_backups')
      .set({ created_at: new Date(Date.now() - 120_000).toISOString() })
      .where('uuid', '=', schedule.uuid)
      .execute();
    const [a, b] = [new VolumeBackupRunner(await instanceDb(), recordOnlyRuntime, silent), new VolumeBackupRunner(await instanceDb(), recordOnlyRuntime, silent)];
    const runs = () =>
      s.db
        .selectFrom('scheduled_volume_backup_executions as e')
        .innerJoin('scheduled_volume_backups as b', 'b.id', 'e.backup_id')
        .select(['e.uuid', 'e.status', 'e.scheduled_for'])
        .where('b.uuid', '=', schedule.uuid)
        .orderBy('e.id')
        .execute();

    const now = minuteAt(0);
    await Promise.all([a.tick(now), b.tick(now), a.tick(now), b.tick(now)]);
    const [run, ...more] = await runs();
    expect(more).toEqual([]);
    expect(run).toMatchObject({ status: 'failed', scheduled_for: slotOf(now) });
    const writerUser = (await s.db.selectFrom('users').select('id').where('email', '=', `volume-writer-${process.pid}@example.test`).executeTakeFirstOrThrow()).id;
    // The schedule is named by its storage's uuid (the path's), as its calls' entries name it.
    expect(await jobEntries(storage)).toMatchObject([
      {
        team_id: s.rootTeamId,
        user_id: writerUser,
        token_id: writer.id,
        source_ip: null,
        operation: 'run_database_storage_backup',
        targets: [database, storage],
        arguments: { scheduled_for: slotOf(now) },
        result: 'failed',
        status: 500,
        started_uuid: run!.uuid,
      },
    ]);

    // The root token changes it: the next slot is the root token's, one entry again.
    await api('PUT', path, { frequency: 'every_minute', retention_amount_locally: 2 });
    const next = minuteAt(1);
    await Promise.all([b.tick(next), a.tick(next), b.tick(next)]);
    const ended = await runs();
    expect(ended.map((r) => r.scheduled_for)).toEqual([slotOf(now), slotOf(next)]);
    expect((await jobEntries(storage)).map((e) => [e.token_id, e.started_uuid, e.result])).toEqual([
      [writer.id, run!.uuid, 'failed'],
      [rootTokenId, ended[1]!.uuid, 'failed'],
    ]);
  });
});
