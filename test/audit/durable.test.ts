import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { openStore, type Db } from '../../src/store/db.js';
import { writeAuditRetentionDays } from '../../src/store/settings.js';
import { AuditRetention } from '../../src/workers/audit-retention.js';
import { runBerth } from '../helpers/cli-run.js';
import { spawnServe } from '../helpers/process.js';
import { call, tempDir } from '../helpers/server.js';
import { storeEnv, storeUrlFor } from '../helpers/store.js';
import pino from 'pino';

/**
 * What the audit log keeps when things go wrong, and for how long: an answered change's entry
 * survives a kill -9 of `berth serve` right after the answer; the retention worker removes only
 * entries past the setting; `berth audit` reads a team's log. Runs on the store BERTH_TEST_STORE names.
 */

let dataDir: string;
let db: Db;
let rootToken: string;
let teamId: number;

beforeAll(async () => {
  dataDir = tempDir('berth-audit-');
  db = await openStore(dataDir, storeUrlFor(dataDir));
  const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
  rootToken = init.token;
  teamId = init.team.id;
});
afterAll(async () => {
  await db.destroy();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('audit durability and retention', () => {
  it('keeps the entry of an answered change through a kill -9 right after the answer', async () => {
    const serve = await spawnServe(dataDir);
    const r = await call(serve.url, 'POST', '/api/v1/projects', { token: rootToken, body: { name: 'survivor' } });
    serve.proc.kill('SIGKILL');
    expect(r.status).toBe(201);
    await new Promise((res) => (serve.proc.exitCode !== null || serve.proc.signalCode !== null ? res(null) : serve.proc.once('exit', res)));
    // A fresh handle on the store, as the next start would open it.
    const again = await openStore(dataDir, storeUrlFor(dataDir));
    try {
      const rows = await again.selectFrom('audit_log').selectAll().where('operation', '=', 'create_project').execute();
      expect(rows).toHaveLength(1);
      expect(JSON.parse(rows[0]!.targets)).toEqual([r.json.uuid]);
      expect(rows[0]).toMatchObject({ result: 'ok', status: 201, door: 'rest', team_id: teamId });
    } finally {
      await again.destroy();
    }
  });

  it("`berth audit` lists a team's entries, filtered", async () => {
    const r = await runBerth(['audit', '--team', String(teamId), '--operation', 'create_project', '--json', '--data', dataDir], { cwd: dataDir, env: storeEnv(dataDir) });
    expect(r.code).toBe(0);
    const page = JSON.parse(r.stdout);
    expect(page.total).toBe(1);
    expect(page.items[0]).toMatchObject({ operation: 'create_project', user_email: 'owner@example.test', door: 'rest' });
    const human = await runBerth(['audit', '--team', 'Root Team', '--data', dataDir], { cwd: dataDir, env: storeEnv(dataDir) });
    expect(human.stdout).toMatch(/create_project\tok 201\trest\towner@example.test token \d+/);
    const bad = await runBerth(['audit', '--team', String(teamId), '--from', 'soon', '--data', dataDir], { cwd: dataDir, env: storeEnv(dataDir) });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/from: Must be an ISO-8601/);
  });

  it('the retention worker removes entries past the setting and nothing newer', async () => {
    const now = new Date('2026-11-26T12:00:00Z');
    const daysAgo = (d: number) => new Date(now.getTime() - d * 86_400_000).toISOString();
    const row = (uuid: string, at: string) => ({
      uuid,
      at,
      team_id: teamId,
      user_id: null,
      token_id: null,
      oauth_client_id: null,
      source_ip: null,
      door: 'rest' as const,
      operation: 'create_project',
      targets: '[]',
      arguments: '{}',
      result: 'ok',
      status: 201,
      duration_ms: 1,
      started_uuid: null,
    });
    // Arranged in the store: the API cannot write an entry dated in the past.
    await db
      .insertInto('audit_log')
      .values([row('retentionold0000000000000', daysAgo(40)), row('retentionkept000000000000', daysAgo(20)), row('retentiondefault00000000', daysAgo(80))])
      .execute();
    const worker = new AuditRetention(db, pino({ level: 'silent' }));
    await worker.tick(now);
    const left = async () => (await db.selectFrom('audit_log').select('uuid').where('uuid', 'like', 'retention%').execute()).map((r) => r.uuid).sort();
    // Default 90 days: all three stay.
    expect(await left()).toEqual(['retentiondefault00000000', 'retentionkept000000000000', 'retentionold0000000000000']);
    await writeAuditRetentionDays(db, 30);
    await new AuditRetention(db, pino({ level: 'silent' })).tick(now);
    expect(await left()).toEqual(['retentionkept000000000000']);
    // The live entry from the first test is newer than any cutoff and stays.
    expect(await db.selectFrom('audit_log').select('uuid').where('operation', '=', 'create_project').where('uuid', 'not like', 'retention%').execute()).toHaveLength(1);
  });
});
