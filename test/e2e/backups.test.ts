/**
 * End to end on a real engine: a PostgreSQL database (image built by `engines.sh pg-image` from
 * Debian's package, no registry) is backed up on demand by a helper container made from its own
 * image (pg_dump over 127.0.0.1 in the database container's network namespace) into the
 * database's backup volume; the row dropped afterwards comes back with the restore operation, which
 * answers at once here (answer bound 0) and goes on in berth's background, on its execution's record.
 * Then a backup of the stopped database leaves a failed execution with a clear message.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupVolumeName } from '../../src/engine/backup-plan.js';
import { LiveRuntime } from '../../src/engine/live-runtime.js';
import { createLogger } from '../../src/logging/logger.js';
import { BackupRunner } from '../../src/workers/database-backup-runner.js';
import { VolumeBackupRunner } from '../../src/workers/volume-backup-runner.js';
import { ENGINE_IMAGE, ENGINES_SCRIPT, enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, registerEngines, until, type Platform } from './support.js';

const PG_IMAGE = 'localhost/berth-postgres:15';

describe.skipIf(!enginesAvailable)('database backups on a real engine (PostgreSQL)', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    // Debian's postgresql package is the image's source (installed already where the store tests ran).
    execFileSync('bash', [path.join(path.dirname(ENGINES_SCRIPT), 'postgres.sh'), 'install'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
    execFileSync('bash', [ENGINES_SCRIPT, 'pg-image', engines.dir], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ENGINES_QUIET: '1' }, timeout: 300_000 });
    // Calls answer at once (answer bound 0): start and stop are followed by their deployments, and
    // the restore goes on in berth's background after its answer, on its execution's record.
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE, answerWithinMs: 0 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 360_000);
  afterAll(async () => {
    await s?.stop();
  });

  const psql = (db: string, q: string) => engines.podman('a', ['exec', db, 'psql', '-U', 'app', '-d', 'shop', '-tAc', q]).trim();
  const runs = async (db: string, backup: string) => (await api.ok('GET', `/databases/${db}/backups/${backup}/executions`)).executions;
  const ended = (db: string, backup: string, uuid: string) =>
    until(
      `execution ${uuid}`,
      async () => {
        const e = (await runs(db, backup)).find((x: { uuid: string }) => x.uuid === uuid);
        return e && e.status !== 'running' ? e : undefined;
      },
      60_000,
    );

  it('backs up, loses a row, restores it; a backup of a stopped database fails clearly', async () => {
    const { uuid: db } = await api.ok('POST', '/databases/postgresql', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      image: PG_IMAGE,
      postgres_user: 'app',
      postgres_password: 'app-secret-pw',
      postgres_db: 'shop',
    });
    const d = await api.ok('POST', `/databases/${db}/start`);
    await deployed(api, d.deployment_uuid ?? d.deployments?.[0]?.deployment_uuid, 60_000);
    await until(
      'postgres ready',
      async () => {
        try {
          return psql(db, 'select 1') === '1' ? true : undefined;
        } catch {
          return undefined;
        }
      },
      60_000,
      300,
    );
    psql(db, "create table orders (id int primary key, item text); insert into orders values (1, 'kept-by-backup')");

    const b = await api.ok('POST', `/databases/${db}/backups`, { frequency: 'daily', backup_now: true, database_backup_retention_amount_locally: 3 });
    const run = await ended(db, b.uuid, b.execution_uuid);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'success', database_name: 'shop', message: 'Backup completed.' });
    expect(run.filename).toMatch(/^pg-dump-shop-\d{8}T\d{6}Z\.dmp$/);
    expect(run.size).toBeGreaterThan(0);
    // The file is in the database's backup volume, with the size recorded.
    const listing = engines.podman('a', ['run', '--rm', '--network', 'none', '-v', `${backupVolumeName(db)}:/b`, ENGINE_IMAGE, 'wc', '-c', `/b/${run.filename}`]);
    expect(Number(listing.trim().split(/\s+/)[0])).toBe(run.size);
    // No helper container is left behind.
    expect(engines.podman('a', ['ps', '-a', '--filter', `label=berth.backup-of=${db}`, '--format', '{{.Names}}']).trim()).toBe('');

    psql(db, 'delete from orders');
    expect(psql(db, 'select count(*) from orders')).toBe('0');
    const restored = await api.ok('POST', `/databases/${db}/backups/${b.uuid}/executions/${b.execution_uuid}/restore`);
    expect(restored).toMatchObject({
      restore_status: 'running',
      follow: { tool: 'list_database_backup_executions', arguments: { uuid: db, scheduled_backup_uuid: b.uuid }, resource: `berth://databases/${db}` },
    });
    expect(restored.message).toContain(b.execution_uuid);
    const back = await until(
      'the restore to end',
      async () => {
        const e = (await runs(db, b.uuid)).find((x: { uuid: string }) => x.uuid === b.execution_uuid);
        return e.restore_status === 'running' ? undefined : e;
      },
      60_000,
    );
    expect(back, JSON.stringify(back)).toMatchObject({ restore_status: 'success', restore_message: 'Backup restored.', status: 'success' });
    expect(Date.parse(back.restore_finished_at)).toBeGreaterThanOrEqual(Date.parse(back.restore_started_at));
    expect(psql(db, 'select item from orders where id = 1')).toBe('kept-by-backup');

    // Scheduled runs (a database backup and a volume backup of its storage) by two instances
    // ticking at once: each slot runs once, on the engine, and its end is one `job` audit entry,
    // ok, for the token that set the schedule. A yearly slot made due by backdating: one slot only,
    // whoever (this server's own scheduler included) claims it.
    const scheduledFiles = await scheduledRuns(db);

    // A stopped database: the run fails with the reason, and is never a success.
    const stop = await api.ok('POST', `/databases/${db}/stop`);
    await deployed(api, stop.deployment_uuid ?? stop.deployments?.[0]?.deployment_uuid, 90_000);
    const again = await api.ok('PATCH', `/databases/${db}/backups/${b.uuid}`, { backup_now: true });
    const failed = await ended(db, b.uuid, again.execution_uuid);
    expect(failed).toMatchObject({ status: 'failed', filename: null, size: null });
    expect(failed.message).toMatch(/not running/);

    // Deleting the successful run removes its file from the volume.
    await api.ok('DELETE', `/databases/${db}/backups/${b.uuid}/executions/${b.execution_uuid}`);
    const left = engines.podman('a', ['run', '--rm', '--network', 'none', '-v', `${backupVolumeName(db)}:/b`, ENGINE_IMAGE, 'ls', '/b']).trim();
    expect(left.split(/\s+/).filter(Boolean).sort()).toEqual(scheduledFiles.sort());
  }, 240_000);

  /** See the call above: the scheduled runs' ends and their entries; the files they left. */
  async function scheduledRuns(db: string): Promise<string[]> {
    const logger = createLogger({ level: 'silent', destination: 'stderr' });
    const runtimes = [new LiveRuntime(s.db, logger, ENGINE_IMAGE, false), new LiveRuntime(s.db, logger, ENGINE_IMAGE, false)];
    const longAgo = new Date(Date.now() - 2 * 366 * 86_400_000).toISOString();
    const backup = (await api.ok('POST', `/databases/${db}/backups`, { frequency: 'yearly' })).uuid as string;
    await s.db.updateTable('scheduled_database_backups').set({ created_at: longAgo }).where('uuid', '=', backup).execute();
    const storage = (await api.ok('GET', `/databases/${db}/storages`)).persistent_storages[0].uuid as string;
    const volumeBackup = await api.ok('PUT', `/databases/${db}/storages/${storage}/backups`, { frequency: 'yearly' });
    await s.db.updateTable('scheduled_volume_backups').set({ created_at: longAgo }).where('uuid', '=', volumeBackup.uuid).execute();

    const backupRunners = runtimes.map((r) => new BackupRunner(s.db, r, logger));
    await Promise.all(backupRunners.map((r) => r.tick()));
    await Promise.all(backupRunners.map((r) => r.idle()));
    const [dbRun, ...moreDbRuns] = await runs(db, backup);
    expect(moreDbRuns).toEqual([]);
    const dbEnded = await ended(db, backup, dbRun.uuid);
    expect(dbEnded, JSON.stringify(dbEnded)).toMatchObject({ status: 'success', database_name: 'shop' });
    await Promise.all(runtimes.map((r) => new VolumeBackupRunner(s.db, r, logger).tick()));
    // The server's own scheduler may have claimed the slot first: wait for its run to end.
    const volumeRuns = await until(
      'the volume backup ends',
      async () => {
        const e = (await api.ok('GET', `/databases/${db}/storages/${storage}/backups`)).executions;
        return e.length && e.every((x: { status: string }) => x.status !== 'running') ? e : undefined;
      },
      60_000,
    );
    expect(volumeRuns, JSON.stringify(volumeRuns)).toMatchObject([{ status: 'success' }]);
    for (const r of runtimes) await r.close();

    const rootTokenId = Number(s.rootToken.split('|')[0]);
    const entries = await s.db.selectFrom('audit_log').selectAll().where('door', '=', 'job').orderBy('id').execute();
    expect(entries.map((e) => [e.operation, JSON.parse(e.targets), e.started_uuid, e.result, e.status, e.token_id])).toEqual([
      ['run_database_backup', [db, backup], dbRun.uuid, 'ok', 200, rootTokenId],
      ['run_database_storage_backup', [db, storage], volumeRuns[0].uuid, 'ok', 200, rootTokenId],
    ]);
    return [dbEnded.filename, volumeRuns[0].filename];
  }
});
