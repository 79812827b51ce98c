/**
 * Database backups over real HTTP (Coolify's routes): configuration CRUD, frequency validation,
 * team isolation of backup and execution uuids, permissions, redaction of execution logs, an
 * on-demand run on a record-only server (a failed execution, never a success), and the claim of
 * a scheduled run by exactly one of several runners sharing the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordOnlyRuntime } from '../../src/core/runtime.js';
import { cronPattern as cronOf, lastDue } from '../../src/core/frequency.js';
import { BackupRunner } from '../../src/workers/database-backup-runner.js';
import { buildWorld, type World } from '../helpers/world.js';
import { expectValidation, NOT_FOUND, placeOf, setup, type Ctx } from './support.js';

let c: Ctx;
let other: World;
let otherToken: string;
beforeAll(async () => {
  c = await setup();
  const t = await c.s.team('Backups other team');
  otherToken = t.rootToken;
  other = await buildWorld(c.s, t.rootToken, 'o');
});
afterAll(() => c.stop());

const path = (db: string, rest = '') => `/databases/${db}/backups${rest}`;
const countRows = async () => ({
  backups: (await c.s.db.selectFrom('scheduled_database_backups').select('id').execute()).length,
  executions: (await c.s.db.selectFrom('scheduled_database_backup_executions').select('id').execute()).length,
});

async function settled(db: string, backup: string, token = c.root) {
  for (let i = 0; i < 100; i++) {
    const r = await c.api('GET', path(db, `/${backup}/executions`), token);
    expect(r.status).toBe(200);
    if (r.json.executions.every((e: { status: string }) => e.status !== 'running')) return r.json.executions;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('execution still running');
}

describe('backup configurations', () => {
  it('create → 201 {uuid, message}; list shows Coolify’s fields; PATCH changes them; DELETE removes it', async () => {
    const db = c.w.databaseUuid;
    const r = await c.api('POST', path(db), c.write, {
      frequency: 'daily',
      database_backup_retention_amount_locally: 5,
      database_backup_retention_days_locally: 7,
      database_backup_retention_max_storage_locally: 1.5,
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toEqual({ uuid: expect.stringMatching(/^[a-z0-9]{24}$/), message: 'Backup configuration created successfully.' });
    const list = await c.api('GET', path(db), c.read);
    expect(list.status).toBe(200);
    const mine = list.json.find((b: { uuid: string }) => b.uuid === r.json.uuid);
    expect(mine).toMatchObject({
      uuid: r.json.uuid,
      database_uuid: db,
      database_type: 'standalone-postgresql',
      enabled: true,
      save_s3: false,
      frequency: 'daily',
      dump_all: false,
      database_backup_retention_amount_locally: 5,
      database_backup_retention_days_locally: 7,
      database_backup_retention_max_storage_locally: 1.5,
      timeout: 3600,
      executions: [],
    });

    const p = await c.api('PATCH', path(db, `/${r.json.uuid}`), c.write, { frequency: '*/15 * * * *', enabled: false, database_backup_retention_amount_locally: 2 });
    expect(p.status, p.text).toBe(200);
    expect(p.json).toEqual({ message: 'Database backup configuration updated' });
    const after = (await c.api('GET', path(db), c.read)).json.find((b: { uuid: string }) => b.uuid === r.json.uuid);
    expect(after).toMatchObject({ frequency: '*/15 * * * *', enabled: false, database_backup_retention_amount_locally: 2, database_backup_retention_days_locally: 7 });

    const d = await c.api('DELETE', path(db, `/${r.json.uuid}`), c.write);
    expect(d.status).toBe(200);
    expect(d.json).toEqual({ message: 'Backup configuration and all executions deleted.' });
    expect((await c.api('GET', path(db), c.read)).json.map((b: { uuid: string }) => b.uuid)).not.toContain(r.json.uuid);
    expect((await c.api('DELETE', path(db, `/${r.json.uuid}`), c.write)).text).toBe(NOT_FOUND);
  });

  it('refuses bad frequencies, unknown fields, S3 and negative retention with 422, and changes nothing', async () => {
    const db = c.w.databaseUuid;
    const before = await countRows();
    for (const frequency of ['sometimes', '* * *', '61 * * * *', '* * * * * *', '', 'daily; rm -rf /']) {
      expectValidation(await c.api('POST', path(db), c.write, { frequency }), ['frequency']);
    }
    const bad = await c.api('POST', path(db), c.write, { frequency: 'sometimes' });
    expect(bad.json.errors.frequency).toEqual(['Invalid cron expression or frequency format.']);
    expectValidation(await c.api('POST', path(db), c.write, {}), ['frequency']);
    expectValidation(await c.api('POST', path(db), c.write, { frequency: 'daily', team_id: 2 }), ['team_id']);
    expectValidation(await c.api('POST', path(db), c.write, { frequency: 'daily', save_s3: true }), ['save_s3']);
    expectValidation(await c.api('POST', path(db), c.write, { frequency: 'daily', database_backup_retention_amount_locally: -1 }), ['database_backup_retention_amount_locally']);
    expectValidation(await c.api('PATCH', path(db, `/${c.w.backupUuid}`), c.write, { frequency: 'every_second' }), ['frequency']);
    // A type without a dump tool berth supports (Coolify refuses dragonfly too).
    const df = await c.api('POST', '/databases/dragonfly', c.write, placeOf(c.w));
    expectValidation(await c.api('POST', path(df.json.uuid), c.write, { frequency: 'daily' }), ['uuid']);
    expect(await countRows()).toEqual(before);
    expect((await c.api('GET', path(c.w.databaseUuid), c.read)).json.find((b: { uuid: string }) => b.uuid === c.w.backupUuid).frequency).toBe('yearly');
  });

  it('frequency words are Coolify’s and map to cron; the last due time is UTC', () => {
    expect(cronOf('daily')).toBe('0 0 * * *');
    expect(cronOf('every_minute')).toBe('* * * * *');
    expect(cronOf('0 3 * * 1')).toBe('0 3 * * 1');
    // Cron's @-words, as Coolify accepts them; an unknown one is not a frequency.
    expect(cronOf('@daily')).toBe('0 0 * * *');
    expect(cronOf('@fortnightly')).toBeNull();
    expect(lastDue('hourly', new Date('2024-05-01T10:59:59Z'))?.toISOString()).toBe('2024-05-01T10:00:00.000Z');
    expect(lastDue('daily', new Date('2024-05-01T00:00:00Z'))?.toISOString()).toBe('2024-05-01T00:00:00.000Z');
  });
});

describe('isolation and permissions', () => {
  it('another team’s database, backup or execution is the same 404 as a missing one', async () => {
    const mine = { db: c.w.databaseUuid, backup: c.w.backupUuid, exec: c.w.backupExecutionUuid };
    const theirs = { db: other.databaseUuid, backup: other.backupUuid, exec: other.backupExecutionUuid };
    const cases: Array<[string, string, unknown?]> = [
      ['GET', path(theirs.db)],
      ['POST', path(theirs.db), { frequency: 'daily' }],
      ['PATCH', path(mine.db, `/${theirs.backup}`), { enabled: false }],
      ['PATCH', path(theirs.db, `/${theirs.backup}`), { enabled: false }],
      ['DELETE', path(mine.db, `/${theirs.backup}`)],
      ['GET', path(mine.db, `/${theirs.backup}/executions`)],
      ['GET', path(mine.db, '/nosuchbackup/executions')],
      ['DELETE', path(mine.db, `/${mine.backup}/executions/${theirs.exec}`)],
      ['DELETE', path(mine.db, `/${mine.backup}/executions/nosuchexecution`)],
      ['POST', path(mine.db, `/${mine.backup}/executions/${theirs.exec}/restore`)],
      ['POST', path(theirs.db, `/${theirs.backup}/executions/${theirs.exec}/restore`)],
    ];
    for (const [method, p, body] of cases) {
      const r = await c.api(method, p, c.root, body);
      expect(`${method} ${p} ${r.status} ${r.text}`).toBe(`${method} ${p} 404 ${NOT_FOUND}`);
    }
    // The other team still has its backup, untouched.
    const theirList = await c.api('GET', path(theirs.db), otherToken);
    expect(theirList.json.map((b: { uuid: string; enabled: boolean }) => [b.uuid, b.enabled])).toEqual([[theirs.backup, true]]);
  });

  it('a read-only token gets 403 on every write; a write token cannot read', async () => {
    const db = c.w.databaseUuid;
    const writes: Array<[string, string, unknown?]> = [
      ['POST', path(db), { frequency: 'daily' }],
      ['PATCH', path(db, `/${c.w.backupUuid}`), { enabled: false }],
      ['DELETE', path(db, `/${c.w.backupUuid}`)],
      ['DELETE', path(db, `/${c.w.backupUuid}/executions/${c.w.backupExecutionUuid}`)],
      ['POST', path(db, `/${c.w.backupUuid}/executions/${c.w.backupExecutionUuid}/restore`)],
    ];
    for (const [method, p, body] of writes) {
      const r = await c.api(method, p, c.read, body);
      expect(r.status, `${method} ${p}`).toBe(403);
      expect(r.json.missing_permissions).toEqual(['write']);
    }
    expect((await c.api('GET', path(db), c.write)).status).toBe(403);
    expect((await c.api('GET', path(db), c.read)).json.find((b: { uuid: string }) => b.uuid === c.w.backupUuid).enabled).toBe(true);
  });
});

describe('executions', () => {
  it('backup_now on a server berth cannot reach: a failed execution with a clear message; logs only for read:sensitive', async () => {
    const db = c.w.databaseUuid;
    const r = await c.api('POST', path(db), c.readWrite, { frequency: 'weekly', backup_now: true });
    expect(r.status, r.text).toBe(201);
    expect(r.json.execution_uuid).toMatch(/^[a-z0-9]{24}$/);
    const runs = await settled(db, r.json.uuid, c.read);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ uuid: r.json.execution_uuid, status: 'failed', filename: null, size: null, finished_at: expect.any(String) });
    expect(runs[0].message).toMatch(/^Nothing was backed up\. The server has no engine berth can reach/);
    expect(runs[0]).not.toHaveProperty('logs');
    const full = await c.api('GET', path(db, `/${r.json.uuid}/executions`), c.sensitive);
    expect(full.json.executions[0].logs).toMatch(/Nothing was backed up/);
    // The listing of configurations carries the same executions, redacted the same way.
    const listed = (await c.api('GET', path(db), c.read)).json.find((b: { uuid: string }) => b.uuid === r.json.uuid);
    expect(listed.executions.map((e: { uuid: string }) => e.uuid)).toEqual([r.json.execution_uuid]);
    expect(listed.executions[0]).not.toHaveProperty('logs');

    // PATCH with backup_now runs another one.
    const p = await c.api('PATCH', path(db, `/${r.json.uuid}`), c.write, { backup_now: true });
    expect(p.json.execution_uuid).toMatch(/^[a-z0-9]{24}$/);
    expect((await settled(db, r.json.uuid)).map((e: { uuid: string; status: string }) => [e.uuid, e.status])).toEqual([
      [p.json.execution_uuid, 'failed'],
      [r.json.execution_uuid, 'failed'],
    ]);

    // A failed run cannot be restored; deleting one removes only it.
    expectValidation(await c.api('POST', path(db, `/${r.json.uuid}/executions/${r.json.execution_uuid}/restore`), c.write), ['execution_uuid']);
    const d = await c.api('DELETE', path(db, `/${r.json.uuid}/executions/${r.json.execution_uuid}`), c.write);
    expect(d.json).toEqual({ message: 'Backup execution deleted.' });
    expect((await settled(db, r.json.uuid)).map((e: { uuid: string }) => e.uuid)).toEqual([p.json.execution_uuid]);
  });

  it('a restore is recorded on its execution: one at a time, and one whose instance died is failed by the sweep', async () => {
    const db = c.w.databaseUuid;
    const b = await c.s.db.selectFrom('scheduled_database_backups').select(['id', 'uuid', 'timeout']).where('uuid', '=', c.w.backupUuid).executeTakeFirstOrThrow();
    const uuid = `restorable${'x'.repeat(14)}`;
    const at = new Date().toISOString();
    await c.s.db
      .insertInto('scheduled_database_backup_executions')
      .values({
        uuid,
        backup_id: b.id,
        status: 'success',
        message: 'Backup completed.',
        logs: null,
        size: 10,
        filename: 'r.dmp',
        database_name: 'postgres',
        scheduled_for: null,
        local_storage_deleted: 0,
        finished_at: at,
        created_at: at,
        updated_at: at,
      })
      .execute();
    const restore = () => c.api('POST', path(db, `/${b.uuid}/executions/${uuid}/restore`), c.write);
    const execution = async () => (await c.api('GET', path(db, `/${b.uuid}/executions`), c.sensitive)).json.executions.find((e: { uuid: string }) => e.uuid === uuid);
    expect(await execution()).toMatchObject({ restore_status: null, restore_message: null, restore_started_at: null });

    // A record-only server: the restore ends at once, restoring nothing, and says so on the execution too.
    const r = await restore();
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({
      restore_status: 'success',
      follow: { tool: 'list_database_backup_executions', arguments: { uuid: db, scheduled_backup_uuid: b.uuid }, resource: `berth://databases/${db}` },
    });
    expect(r.json.message).toMatch(/^Nothing was restored/);
    const done = await execution();
    expect(done).toMatchObject({ restore_status: 'success', restore_message: r.json.message, restore_logs: expect.stringMatching(/Nothing was restored/) });
    expect(done.restore_finished_at).toEqual(expect.any(String));
    // Without read:sensitive the restore tool's output is left out, as the dump tool's is.
    expect((await c.api('GET', path(db, `/${b.uuid}/executions`), c.read)).json.executions.find((e: { uuid: string }) => e.uuid === uuid)).not.toHaveProperty('restore_logs');

    // One restore of a file at a time: a second while one runs is a 409 naming how to follow it.
    const long = '2000-01-01T00:00:00.000Z';
    await c.s.db.updateTable('scheduled_database_backup_executions').set({ restore_status: 'running', restore_started_at: long, restore_finished_at: null }).where('uuid', '=', uuid).execute();
    const again = await restore();
    expect(again.status, again.text).toBe(409);
    expect(again.json.message).toMatch(/running already; follow it with list_database_backup_executions/);

    // Its instance died: past the backup's timeout and the grace, the sweep fails it (not before).
    const runner = new BackupRunner(c.s.db, recordOnlyRuntime, { warn: () => undefined } as never);
    await runner.tick(new Date(Date.parse(long) + b.timeout * 1000));
    expect((await execution()).restore_status).toBe('running');
    await runner.tick(new Date(Date.parse(long) + b.timeout * 1000 + 61_000));
    expect(await execution()).toMatchObject({ restore_status: 'failed', restore_message: expect.stringMatching(/^berth stopped during this restore/), status: 'success' });
    // And it can be restored again.
    expect((await restore()).json.restore_status).toBe('success');
  });

  it('a scheduled run is claimed by exactly one of several runners sharing the store', async () => {
    const created = await c.api('POST', path(c.w.databaseUuid), c.write, { frequency: 'hourly' });
    const id = (await c.s.db.selectFrom('scheduled_database_backups').select('id').where('uuid', '=', created.json.uuid).executeTakeFirstOrThrow()).id;
    await c.s.db.updateTable('scheduled_database_backups').set({ created_at: '2020-01-01T00:00:00.000Z' }).where('id', '=', id).execute();
    const logger = { warn: () => undefined } as never;
    const runners = [0, 1, 2].map(() => new BackupRunner(c.s.db, recordOnlyRuntime, logger));
    const now = new Date('2020-01-01T05:00:30Z');
    await Promise.all(runners.map((r) => r.tick(now)));
    await Promise.all(runners.map((r) => r.idle()));
    const rows = await c.s.db.selectFrom('scheduled_database_backup_executions').selectAll().where('backup_id', '=', id).where('scheduled_for', '=', '2020-01-01T05:00:00.000Z').execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'failed' });
    // The same schedule time again: nothing new.
    await Promise.all(runners.map((r) => r.tick(new Date('2020-01-01T05:40:00Z'))));
    expect((await c.s.db.selectFrom('scheduled_database_backup_executions').select('id').where('backup_id', '=', id).where('scheduled_for', 'like', '2020-%').execute()).length).toBe(1);
    // A disabled backup is never claimed.
    await c.s.db.updateTable('scheduled_database_backups').set({ enabled: 0 }).where('id', '=', id).execute();
    await runners[0]!.tick(new Date('2020-01-01T07:00:30Z'));
    expect((await c.s.db.selectFrom('scheduled_database_backup_executions').select('id').where('backup_id', '=', id).where('scheduled_for', 'like', '2020-%').execute()).length).toBe(1);
  });

  it('retention keeps the newest N, drops what is older than D days or over the storage cap, files first', async () => {
    const created = await c.api('POST', path(c.w.databaseUuid), c.write, { frequency: 'yearly', database_backup_retention_amount_locally: 3 });
    const id = (await c.s.db.selectFrom('scheduled_database_backups').select('id').where('uuid', '=', created.json.uuid).executeTakeFirstOrThrow()).id;
    const day = 86_400_000;
    const add = async (name: string, ageDays: number, size: number, status: 'success' | 'failed' = 'success') => {
      const at = new Date(Date.now() - ageDays * day).toISOString();
      await c.s.db
        .insertInto('scheduled_database_backup_executions')
        .values({
          uuid: `${name}${'x'.repeat(24 - name.length)}`,
          backup_id: id,
          status,
          message: null,
          logs: null,
          size,
          filename: `${name}.dmp`,
          database_name: 'postgres',
          scheduled_for: null,
          local_storage_deleted: 0,
          finished_at: at,
          created_at: at,
          updated_at: at,
        })
        .execute();
    };
    for (const [n, age, size] of [
      ['a', 0, 100],
      ['b', 1.5, 100],
      ['c', 2, 100],
      ['d', 3, 100],
      ['e', 4, 100],
    ] as const)
      await add(n, age, size);
    await add('f', 5, 0, 'failed');
    const removed: string[][] = [];
    const runtime = { ...recordOnlyRuntime, removeBackupFiles: async (_: number, files: string[]) => void removed.push(files) };
    const runner = new BackupRunner(c.s.db, runtime, { warn: () => undefined } as never);
    const left = async () =>
      (await c.s.db.selectFrom('scheduled_database_backup_executions').select('filename').where('backup_id', '=', id).orderBy('created_at', 'desc').execute()).map((r) => r.filename);

    await runner.retain(id);
    expect(removed).toEqual([['d.dmp', 'e.dmp']]);
    expect(await left()).toEqual(['a.dmp', 'b.dmp', 'c.dmp', 'f.dmp']); // a failed run has no file and does not count
    await c.api('PATCH', path(c.w.databaseUuid, `/${created.json.uuid}`), c.write, { database_backup_retention_amount_locally: 0, database_backup_retention_days_locally: 1 });
    await runner.retain(id);
    expect(removed.at(-1)).toEqual(['b.dmp', 'c.dmp']);
    await add('g', 0.5, 100);
    // 150 bytes of room: the newest (100) fits, the next would pass the cap; the newest always stays.
    await c.api('PATCH', path(c.w.databaseUuid, `/${created.json.uuid}`), c.write, { database_backup_retention_days_locally: 0, database_backup_retention_max_storage_locally: 150 / 1024 ** 3 });
    await runner.retain(id);
    expect(removed.at(-1)).toEqual(['g.dmp']);
    expect(await left()).toEqual(['a.dmp', 'f.dmp']);
  });

  it('deleting the database removes its backups and executions (no orphans)', async () => {
    const db = (await c.api('POST', '/databases/postgresql', c.write, placeOf(c.w))).json.uuid;
    const b = await c.api('POST', path(db), c.write, { frequency: 'daily', backup_now: true });
    await settled(db, b.json.uuid);
    expect((await c.api('DELETE', `/databases/${db}`, c.write)).status).toBe(200);
    expect(await c.s.db.selectFrom('scheduled_database_backups').select('id').where('uuid', '=', b.json.uuid).execute()).toEqual([]);
    expect(await c.s.db.selectFrom('scheduled_database_backup_executions').select('id').where('uuid', '=', b.json.execution_uuid).execute()).toEqual([]);
  });
});
