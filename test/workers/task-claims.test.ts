/**
 * Scheduled task firings on a real store (SQLite or PostgreSQL, whichever the run uses): two
 * task runners on two store handles (as two berth instances have) tick at the same moment, again
 * and again, and each task's firing is claimed and run exactly once; the next minute is another
 * firing, once too. A disabled task is never claimed; a run whose instance died is failed once
 * its timeout has passed; the records of runs on a record-only server say why nothing ran. A
 * clone copies the tasks; a delete removes them.
 */
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordOnlyRuntime } from '../../src/core/runtime.js';
import { TaskRunner } from '../../src/workers/scheduled-tasks.js';
import { nowIso, openStore, type Db } from '../../src/store/db.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';

let s: TestServer;
let app: string;
const handles: Db[] = [];

beforeAll(async () => {
  s = await startTestServer();
  const place = async () => {
    const server = await call(s.url, 'POST', '/api/v1/servers', { token: s.rootToken, body: { name: 'records', ip: '10.0.0.9' } });
    const project = await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'tasks' } });
    return { project_uuid: project.json.uuid, server_uuid: server.json.uuid, environment_name: 'production' };
  };
  const r = await call(s.url, 'POST', '/api/v1/applications/dockerimage', { token: s.rootToken, body: { ...(await place()), docker_registry_image_name: 'nginx' } });
  app = r.json.uuid;
});
afterAll(async () => {
  for (const h of handles) await h.destroy();
  await s.stop();
});

/**
 * A runner as another instance has it. On PostgreSQL each gets its own pool, so their claims
 * really race. On SQLite instances are processes; two handles in one process would wait on each
 * other's write lock synchronously, so they share the test's handle (claims then interleave at
 * every await instead).
 */
async function runner(): Promise<TaskRunner> {
  let db = s.db;
  if (TEST_STORE === 'postgres') {
    db = await openStore(s.dataDir, storeUrlFor(s.dataDir));
    handles.push(db);
  }
  return new TaskRunner(db, recordOnlyRuntime, pino({ level: 'silent' }));
}

async function task(body: Record<string, unknown>): Promise<string> {
  const r = await call(s.url, 'POST', `/api/v1/applications/${app}/scheduled-tasks`, { token: s.rootToken, body: { command: 'echo hi', frequency: 'every_minute', ...body } });
  expect(r.status, r.text).toBe(201);
  // Made two minutes ago: the current minute's firing is due.
  await s.db
    .updateTable('scheduled_tasks')
    .set({ created_at: new Date(Date.now() - 120_000).toISOString() })
    .where('uuid', '=', r.json.uuid)
    .execute();
  return r.json.uuid;
}

const runsOf = async (uuid: string) =>
  s.db
    .selectFrom('scheduled_task_executions as e')
    .innerJoin('scheduled_tasks as t', 't.id', 'e.task_id')
    .select(['e.status', 'e.message', 'e.scheduled_for'])
    .where('t.uuid', '=', uuid)
    .orderBy('e.id')
    .execute();

describe('scheduled task claims', () => {
  it('two instances ticking at once run each firing exactly once', async () => {
    const [a, b] = [await runner(), await runner()];
    const tasks = await Promise.all(Array.from({ length: 6 }, (_, i) => task({ name: `claim-${i}` })));
    const off = await task({ name: 'off', enabled: false });
    const now = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000);
    for (let round = 0; round < 4; round++) await Promise.all([a.tick(now), b.tick(now), a.tick(now), b.tick(now)]);
    await Promise.all([a.idle(), b.idle()]);
    const minute = new Date(now.getTime() - 30_000).toISOString();
    for (const t of tasks) {
      const runs = await runsOf(t);
      expect(
        runs.map((r) => r.scheduled_for),
        t,
      ).toEqual([minute]);
      // The world's server has no engine: the run is failed, and says why.
      expect(runs[0]).toMatchObject({ status: 'failed' });
      expect(runs[0]!.message).toMatch(/^Nothing was run\. The server has no engine berth can reach/);
    }
    expect(await runsOf(off)).toEqual([]);

    const next = new Date(now.getTime() + 60_000);
    await Promise.all([b.tick(next), a.tick(next), b.tick(next)]);
    await Promise.all([a.idle(), b.idle()]);
    for (const t of tasks) expect((await runsOf(t)).map((r) => r.scheduled_for)).toEqual([minute, new Date(next.getTime() - 30_000).toISOString()]);
  });

  it('a clone gets copies of the tasks without their runs; deleting an application deletes its tasks', async () => {
    await task({ name: 'copied', frequency: '15 3 * * *', timeout: 42 });
    const dest = (await call(s.url, 'GET', '/api/v1/destinations', { token: s.rootToken })).json[0].uuid;
    const clone = await call(s.url, 'POST', `/api/v1/applications/${app}/clone`, { token: s.rootToken, body: { destination_uuid: dest } });
    expect(clone.status, clone.text).toBe(201);
    const list = async (uuid: string) => (await call(s.url, 'GET', `/api/v1/applications/${uuid}/scheduled-tasks`, { token: s.rootToken })).json;
    const copied = (await list(clone.json.uuid)).find((t: { name: string }) => t.name === 'copied');
    const original = (await list(app)).find((t: { name: string }) => t.name === 'copied');
    expect(copied).toMatchObject({ frequency: '15 3 * * *', timeout: 42, enabled: true, container: null });
    expect(copied.uuid).not.toBe(original.uuid);
    expect((await list(clone.json.uuid)).length).toBe((await list(app)).length);
    expect(await runsOf(copied.uuid)).toEqual([]);

    const del = await call(s.url, 'DELETE', `/api/v1/applications/${clone.json.uuid}`, { token: s.rootToken });
    expect(del.status, del.text).toBe(200);
    expect(await s.db.selectFrom('scheduled_tasks').select('id').where('uuid', '=', copied.uuid).execute()).toEqual([]);
  });

  it('a run left running by an instance that died is failed once its timeout has passed', async () => {
    const t = await task({ name: 'orphan', timeout: 5, enabled: false });
    const id = (await s.db.selectFrom('scheduled_tasks').select('id').where('uuid', '=', t).executeTakeFirstOrThrow()).id;
    const at = (ms: number) => new Date(Date.now() - ms).toISOString();
    const insert = (uuid: string, started: string) =>
      s.db
        .insertInto('scheduled_task_executions')
        .values({
          uuid,
          task_id: id,
          status: 'running',
          message: 'Task in progress.',
          logs: null,
          exit_code: null,
          scheduled_for: null,
          started_at: started,
          finished_at: null,
          created_at: started,
          updated_at: nowIso(),
        })
        .execute();
    await insert(`orphanold${Date.now()}`, at(120_000));
    await insert(`orphannew${Date.now()}`, at(1_000));
    await (await runner()).tick();
    const runs = await runsOf(t);
    expect(runs.map((r) => r.status)).toEqual(['failed', 'running']);
    expect(runs[0]!.message).toBe('berth stopped during this run; whether the command finished is unknown.');
  });

  it('each scheduled run that ends is one `job` entry, for whoever set the task, seen by its team only', async () => {
    const writer = await s.token({ permissions: ['read', 'write'], email: `writer-${process.pid}@example.test` });
    const [a, b] = [await runner(), await runner()];
    const t = await task({ name: 'audited' });
    const jobEntries = async () =>
      (await s.db.selectFrom('audit_log').selectAll().where('door', '=', 'job').where('targets', 'like', `%"${t}"%`).orderBy('id').execute()).map((e) => ({
        ...e,
        targets: JSON.parse(e.targets),
        arguments: JSON.parse(e.arguments!),
      }));
    const now = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000);
    await Promise.all([a.tick(now), b.tick(now), a.tick(now), b.tick(now)]);
    await Promise.all([a.idle(), b.idle()]);
    const [run] = await s.db
      .selectFrom('scheduled_task_executions as e')
      .innerJoin('scheduled_tasks as k', 'k.id', 'e.task_id')
      .select(['e.uuid', 'e.scheduled_for'])
      .where('k.uuid', '=', t)
      .execute();
    const rootTokenId = Number(s.rootToken.split('|')[0]);
    const owner = (await s.db.selectFrom('users').select('id').where('email', '=', s.ownerEmail).executeTakeFirstOrThrow()).id;
    // Record-only server: nothing ran, a failed run; still one entry, whichever instance wrote it.
    expect(await jobEntries()).toMatchObject([
      {
        team_id: s.rootTeamId,
        user_id: owner,
        token_id: rootTokenId,
        source_ip: null,
        operation: 'execute_application_scheduled_task',
        targets: [app, t],
        arguments: { scheduled_for: run!.scheduled_for },
        result: 'failed',
        status: 500,
        started_uuid: run!.uuid,
      },
    ]);

    // Another token changes the schedule: the next firing is attributed to it.
    const changed = await call(s.url, 'PATCH', `/api/v1/applications/${app}/scheduled-tasks/${t}`, { token: writer.token, body: { timeout: 60 } });
    expect(changed.status, changed.text).toBe(200);
    const next = new Date(now.getTime() + 60_000);
    await Promise.all([b.tick(next), a.tick(next)]);
    await Promise.all([a.idle(), b.idle()]);
    const entries = await jobEntries();
    expect(entries.map((e) => e.token_id)).toEqual([rootTokenId, writer.id]);

    // Read through the API: the team sees them; another team never does.
    const mine = await call(s.url, 'GET', `/api/v1/audit?resource=${t}&per_page=100`, { token: s.rootToken });
    expect((mine.json as { door: string }[]).filter((e) => e.door === 'job')).toHaveLength(2);
    const other = await s.team('Outsiders');
    const theirs = await call(s.url, 'GET', '/api/v1/audit?per_page=100', { token: other.rootToken });
    expect(theirs.status).toBe(200);
    expect((theirs.json as { door: string }[]).filter((e) => e.door === 'job')).toEqual([]);
  });

  it('a run whose entry cannot be stored still ends (the entry goes to the operational log)', async () => {
    const t = await task({ name: 'unaudited' });
    const refuse =
      TEST_STORE === 'postgres'
        ? [
            sql`CREATE OR REPLACE FUNCTION job_audit_refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$ LANGUAGE plpgsql`,
            sql`CREATE TRIGGER job_audit_refuse BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION job_audit_refuse()`,
          ]
        : [sql`CREATE TRIGGER job_audit_refuse BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit refused'); END`];
    for (const q of refuse) await q.execute(s.db);
    try {
      const a = await runner();
      await a.tick(new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000));
      await a.idle();
    } finally {
      await sql`DROP TRIGGER job_audit_refuse${sql.raw(TEST_STORE === 'postgres' ? ' ON audit_log' : '')}`.execute(s.db);
    }
    expect((await runsOf(t)).map((r) => r.status)).toEqual(['failed']);
    expect(await s.db.selectFrom('audit_log').select('id').where('door', '=', 'job').where('targets', 'like', `%"${t}"%`).execute()).toEqual([]);
  });
});
