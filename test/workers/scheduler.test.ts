/**
 * The one scheduler: `berth mcp` alone (no `serve` ticking the store) runs the database and
 * volume backups that are due, each once, and stops with its stdin.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLI } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';
import { buildWorld, type World } from '../helpers/world.js';

let s: TestServer;
let w: World;
beforeAll(async () => {
  // serve's own scheduler ticks once at its start (before the world exists), then not for an hour.
  s = await startTestServer({ apiRateLimit: 0, scheduleTickMs: 3_600_000 });
  w = await buildWorld(s);
}, 60_000);
afterAll(() => s.stop());

const api = async (method: string, path: string, body?: unknown) => {
  const r = await call(s.url, method, `/api/v1${path}`, { token: s.rootToken, body });
  expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
  return r.json;
};

const scheduledRuns = async () => ({
  database: await s.db.selectFrom('scheduled_database_backup_executions').select(['status', 'message', 'scheduled_for']).where('scheduled_for', 'is not', null).execute(),
  volume: await s.db.selectFrom('scheduled_volume_backup_executions').select(['status', 'message', 'scheduled_for']).where('scheduled_for', 'is not', null).execute(),
});

it('berth mcp on stdio runs due database and volume backups by itself, once each', async () => {
  await api('PATCH', `/databases/${w.databaseUuid}/backups/${w.backupUuid}`, { frequency: 'every_minute' });
  await api('PUT', `/applications/${w.appUuid}/storages/${w.appStorageUuid}/backups`, { frequency: 'every_minute' });
  // Made long ago, so the current minute's slot is due (a slot before a schedule existed never runs).
  await s.db.updateTable('scheduled_database_backups').set({ created_at: '2020-01-01T00:00:00.000Z' }).execute();
  const storage = await s.db.selectFrom('storages').select('id').where('uuid', '=', w.appStorageUuid).executeTakeFirstOrThrow();
  await s.db.updateTable('scheduled_volume_backups').set({ created_at: '2020-01-01T00:00:00.000Z' }).where('storage_id', '=', storage.id).execute();
  expect(await scheduledRuns()).toEqual({ database: [], volume: [] });

  const p = spawn(process.execPath, [CLI, 'mcp', '--data', s.dataDir], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', BERTH_TOKEN: s.rootToken, BERTH_SCHEDULE_TICK_MS: '60000', ...storeEnv(s.dataDir) },
  });
  let stdout = '';
  p.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise<number | null>((resolve) => p.on('close', resolve));
  let runs = await scheduledRuns();
  for (
    const until = Date.now() + 20_000;
    Date.now() < until && (runs.database.some((r) => r.status === 'running') || !runs.database.length || !runs.volume.length || runs.volume.some((r) => r.status === 'running'));
  ) {
    await new Promise((r) => setTimeout(r, 100));
    runs = await scheduledRuns();
  }
  p.stdin.end();
  expect(await exited).toBe(0);
  expect(stdout).toBe('');
  // The servers are record-only: each run ends failed with the reason, which shows it ran.
  const slot = expect.stringMatching(/T\d\d:\d\d:00\.000Z$/);
  expect(runs.database).toEqual([{ status: 'failed', message: expect.stringContaining('Nothing was backed up'), scheduled_for: slot }]);
  expect(runs.volume).toEqual([{ status: 'failed', message: expect.stringContaining('Nothing was backed up'), scheduled_for: slot }]);
}, 60_000);
