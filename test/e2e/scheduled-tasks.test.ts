/**
 * Scheduled tasks on a real engine: a command runs inside an application's (or a service
 * container's) running container over the engine API, on demand and on its schedule, with its
 * output and exit code kept; a failing command and a stopped container are failed runs, a
 * timeout kills what the command started inside the container. Two berth instances on one store
 * (PostgreSQL on a PostgreSQL run) run each firing once. Through REST and an MCP client; another
 * team sees 404s only. A migrated application's task runs on its new server; a deleted
 * application's tasks are gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { httpClient, type AnyClient } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { Api, deployAppWithVolume, deployed, ensureSleeperImage, KEEP_RUNNING, migrationEnded, registerEngines, until, type Platform } from './support.js';

const LEASE_MS = 1_500;

const COMPOSE = `services:
  web:
    image: ${ENGINE_IMAGE}
    command: ["sh", "-c", ${JSON.stringify(KEEP_RUNNING)}]
    environment:
      ROLE: web
  worker:
    image: ${ENGINE_IMAGE}
    command: ["sh", "-c", ${JSON.stringify(KEEP_RUNNING)}]
    environment:
      ROLE: worker
`;

describe.skipIf(!enginesAvailable)('scheduled tasks on a real engine', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let app: string;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    // A short lease makes the jobs' tick (where tasks fire) run every half second.
    // Scheduled tasks tick with the one scheduler: a short tick here so due firings run at once.
    s = await startTestServer({ helperImage: ENGINE_IMAGE, jobLeaseMs: LEASE_MS, scheduleTickMs: 300 }, { API_RATE_LIMIT: '0' });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    app = (await deployAppWithVolume(api, p, 'task-app')).uuid;
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
  });

  const executions = (collection: string, uuid: string, task: string) => api.ok('GET', `/${collection}/${uuid}/scheduled-tasks/${task}/executions`);
  const ended = (collection: string, uuid: string, task: string, execution: string, timeoutMs = 30_000) =>
    until(
      `execution ${execution}`,
      async () => {
        const e = (await executions(collection, uuid, task)).find((x: { uuid: string }) => x.uuid === execution);
        return e && e.status !== 'running' ? e : undefined;
      },
      timeoutMs,
    );
  const runOnce = async (collection: string, uuid: string, task: string) => {
    const r = await api.ok('POST', `/${collection}/${uuid}/scheduled-tasks/${task}/execute`);
    expect(r.message).toBe('Scheduled task execution queued.');
    return ended(collection, uuid, task, r.execution_uuid);
  };

  it('runs a command in the application container on demand and on its schedule, once per firing', async () => {
    const created = await call(s.url, 'POST', `/api/v1/applications/${app}/scheduled-tasks`, {
      token: s.rootToken,
      body: { name: 'report', command: 'echo "out-$((6 * 7)) in $(cat /proc/1/cmdline | tr "\\0" " " | cut -c1-5)"; echo warn >&2', frequency: 'every_minute' },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: 'report', frequency: 'every_minute', container: null, timeout: 300, enabled: true });
    const task = created.json.uuid as string;
    expect((await api.ok('GET', `/applications/${app}/scheduled-tasks`)).map((t: { uuid: string }) => t.uuid)).toEqual([task]);

    const run = await runOnce('applications', app, task);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'success', exit_code: 0, scheduled_for: null, retry_count: 0 });
    // Coolify's message is the command's output (trimmed), where its clients read it.
    expect(run.message).toContain('out-42 in sh -c');
    expect(run.message).toContain('warn');
    expect(run.message).toBe(run.message.trim());
    // It ran inside the app's container (its PID 1 is the image's sh), stdout and stderr kept.
    expect(run.logs).toContain('out-42 in sh -c');
    expect(run.logs).toContain('warn');
    expect(run.logs).not.toContain('berth-task-pid');
    expect(run.duration).toBeGreaterThanOrEqual(0);

    // The next firing: the task is made to look two minutes old, so the current minute is due now.
    const twoMinutesAgo = new Date(Date.now() - 120_000).toISOString();
    await s.db.updateTable('scheduled_tasks').set({ created_at: twoMinutesAgo }).where('uuid', '=', task).execute();
    const fired = await until(
      'a scheduled run',
      async () => (await executions('applications', app, task)).find((e: { scheduled_for: string | null; status: string }) => e.scheduled_for && e.status !== 'running'),
      20_000,
    );
    expect(fired).toMatchObject({ status: 'success', exit_code: 0 });
    expect(fired.scheduled_for.endsWith(':00.000Z')).toBe(true);
    // More ticks pass: the same firing never runs again.
    await new Promise((r) => setTimeout(r, LEASE_MS * 2));
    const slots = (await executions('applications', app, task)).filter((e: { scheduled_for: string | null }) => e.scheduled_for === fired.scheduled_for);
    expect(slots).toHaveLength(1);

    // The audit log's `job` door: the scheduled run is one entry, for the token that set the task;
    // the run on demand is its call's entry (which names the execution), not a job entry.
    // (A loaded machine can cross a minute while the backdated task catches up: then it fired twice,
    // and each firing has its own entry.)
    type Firing = { uuid: string; scheduled_for: string | null; status: string };
    const endedFirings = async () => ((await executions('applications', app, task)) as Firing[]).filter((e) => e.scheduled_for && e.status !== 'running');
    const before = await endedFirings();
    const jobs = await s.db.selectFrom('audit_log').selectAll().where('door', '=', 'job').where('targets', 'like', `%"${task}"%`).execute();
    const after = new Set((await endedFirings()).map((e) => e.uuid));
    const rootTokenId = Number(s.rootToken.split('|')[0]);
    expect(before.map((e) => e.uuid)).toContain(fired.uuid);
    for (const f of before) {
      expect(jobs.filter((e) => e.started_uuid === f.uuid).map((e) => [e.operation, e.result, e.token_id, JSON.parse(e.targets), JSON.parse(e.arguments!)])).toEqual([
        ['execute_application_scheduled_task', f.status === 'success' ? 'ok' : 'failed', rootTokenId, [app, task], { scheduled_for: f.scheduled_for }],
      ]);
    }
    // And no entry for anything but a scheduled run that ended.
    expect(jobs.every((e) => e.started_uuid !== null && after.has(e.started_uuid))).toBe(true);
    const onDemand = await s.db.selectFrom('audit_log').select(['door', 'operation']).where('targets', 'like', `%"${run.uuid}"%`).execute();
    expect(onDemand).toEqual([{ door: 'rest', operation: 'execute_application_scheduled_task' }]);
  }, 90_000);

  it('a failing command, a timeout (its processes killed in the container) and a disabled task', async () => {
    const make = async (body: Record<string, unknown>) => (await api.ok('POST', `/applications/${app}/scheduled-tasks`, { frequency: 'hourly', ...body })).uuid as string;
    const failing = await make({ name: 'fails', command: 'echo about to fail; exit 3' });
    const bad = await runOnce('applications', app, failing);
    expect(bad).toMatchObject({ status: 'failed', exit_code: 3, message: 'about to fail' });
    expect(bad.logs).toContain('about to fail');
    const silent = await runOnce('applications', app, await make({ name: 'silent', command: 'exit 4' }));
    expect(silent).toMatchObject({ status: 'failed', exit_code: 4, message: 'The command failed with exit code 4.' });

    // A long output: the message keeps its start, cut as Coolify cuts (its marker after the cut); logs keep its tail.
    const long = await runOnce('applications', app, await make({ name: 'long', command: 'echo first-line; i=0; while [ $i -lt 12000 ]; do echo line-$i-xxxxxxxxx; i=$((i+1)); done; echo last-line' }));
    expect(long.status).toBe('success');
    expect(long.message.startsWith('first-line\nline-0-')).toBe(true);
    expect(long.message.endsWith('[... Output truncated at 100,000 characters ...]')).toBe(true);
    expect(long.message).not.toContain('last-line');
    expect(long.logs).toContain('last-line');
    expect(long.logs).not.toContain('first-line');

    const slow = await make({ name: 'slow', command: 'echo started; sleep 417 & sleep 418; echo never', timeout: 1 });
    const timedOut = await runOnce('applications', app, slow);
    expect(timedOut).toMatchObject({ status: 'failed', exit_code: null, message: 'The command did not finish within its timeout (1 s) and was stopped.' });
    expect(timedOut.logs).toContain('started');
    expect(timedOut.logs).not.toContain('never');
    // Nothing the command started is left running in the container.
    await until('the sleeps killed', async () => (/sleep 41[78]/.test(engines.podman('a', ['exec', app, 'ps'])) ? undefined : true), 10_000, 250);

    // A disabled task does not fire on its schedule (run on demand it still does, as Coolify's).
    const off = await make({ name: 'off', command: 'echo off', frequency: 'every_minute', enabled: false });
    await s.db
      .updateTable('scheduled_tasks')
      .set({ created_at: new Date(Date.now() - 120_000).toISOString() })
      .where('uuid', '=', off)
      .execute();
    await new Promise((r) => setTimeout(r, LEASE_MS * 2));
    expect(await executions('applications', app, off)).toEqual([]);
    const patched = await api.ok('PATCH', `/applications/${app}/scheduled-tasks/${off}`, { enabled: true, timeout: 30 });
    expect(patched).toMatchObject({ enabled: true, timeout: 30, name: 'off' });
    await until('the enabled task fires', async () => ((await executions('applications', app, off)).length ? true : undefined), 10_000);
  }, 90_000);

  it('validates at the door with the contract 422 shape', async () => {
    const bad = async (body: Record<string, unknown>, field: string) => {
      const r = await call(s.url, 'POST', `/api/v1/applications/${app}/scheduled-tasks`, { token: s.rootToken, body: { name: 'x', command: 'true', frequency: 'daily', ...body } });
      expect(r.status, r.text).toBe(422);
      expect(r.json.message).toBe('Validation error.');
      expect(Object.keys(r.json.errors)).toContain(field);
      return r.json.errors[field][0] as string;
    };
    expect(await bad({ frequency: 'every full moon' }, 'frequency')).toMatch(/Invalid cron expression/);
    expect(await bad({ frequency: '* * * * * *' }, 'frequency')).toMatch(/Invalid cron expression/);
    expect(await bad({ timeout: 0 }, 'timeout')).toBeTruthy();
    // An application's task keeps the container name it is given and runs in its one container, as Coolify's does.
    const named = await api.ok('POST', `/applications/${app}/scheduled-tasks`, { name: 'named', command: 'true', frequency: 'daily', container: 'web' });
    expect(named).toMatchObject({ container: 'web' });
    expect(await bad({ container: 'x'.repeat(256) }, 'container')).toBeTruthy();
    expect(await bad({ command: '' }, 'command')).toBeTruthy();
    expect(await bad({ retries: 3 }, 'retries')).toBe('This field is not allowed.');
    // Coolify's words with an @ are frequencies too.
    expect((await call(s.url, 'POST', `/api/v1/applications/${app}/scheduled-tasks`, { token: s.rootToken, body: { name: 'at', command: 'true', frequency: '@daily' } })).status).toBe(201);
    const some = (await api.ok('GET', `/applications/${app}/scheduled-tasks`))[0].uuid;
    const empty = await call(s.url, 'PATCH', `/api/v1/applications/${app}/scheduled-tasks/${some}`, { token: s.rootToken, body: {} });
    expect(empty.status).toBe(422);
  });

  it('runs in the named container of a service; names are checked; a stopped container is a clear failed run', async () => {
    const { uuid: svc } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'task-service',
      docker_compose_raw: Buffer.from(COMPOSE).toString('base64'),
    });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${svc}`)).deployments[0].deployment_uuid);
    const post = (body: Record<string, unknown>) =>
      call(s.url, 'POST', `/api/v1/services/${svc}/scheduled-tasks`, { token: s.rootToken, body: { name: 'role', command: 'echo "role=$ROLE"', frequency: 'daily', ...body } });
    expect((await post({})).json.errors.container[0]).toMatch(/several containers: name one of web, worker/);
    expect((await post({ container: 'db' })).json.errors.container[0]).toMatch(/no container db/);
    const created = await post({ container: 'worker' });
    expect(created.status).toBe(201);
    const task = created.json.uuid as string;
    expect(await runOnce('services', svc, task)).toMatchObject({ status: 'success', logs: 'role=worker\n' });
    // Moved to the other container by an update.
    await api.ok('PATCH', `/services/${svc}/scheduled-tasks/${task}`, { container: 'web' });
    expect(await runOnce('services', svc, task)).toMatchObject({ status: 'success', logs: 'role=web\n' });

    const stop = await api.ok('POST', `/services/${svc}/stop`);
    await deployed(api, stop.deployment_uuid ?? stop.deployments?.[0]?.deployment_uuid, 60_000);
    const stopped = await runOnce('services', svc, task);
    expect(stopped).toMatchObject({ status: 'failed', exit_code: null, logs: null });
    expect(stopped.message).toBe(`The container ${svc}-web is not running: start the service first.`);
  }, 120_000);

  it('over MCP: create, execute and read the runs; another team gets 404 for every task operation', async () => {
    let mcp: AnyClient | undefined;
    try {
      mcp = await httpClient('v2-modern', s.url, s.rootToken);
      const made = await mcp.callTool('create_application_scheduled_task', { uuid: app, name: 'mcp', command: 'printf mcp-ok', frequency: '0 4 * * *', timeout: 20 });
      expect(made.isError, JSON.stringify(made)).toBeFalsy();
      const task = (made.structuredContent as { uuid: string }).uuid;
      const run = await mcp.callTool('execute_application_scheduled_task', { uuid: app, task_uuid: task });
      const execution = (run.structuredContent as { execution_uuid: string }).execution_uuid;
      const seen = await until(
        'the MCP run',
        async () => {
          const r = await mcp!.callTool('list_application_scheduled_task_executions', { uuid: app, task_uuid: task });
          const e = (r.structuredContent as { items: Array<{ uuid: string; status: string }> }).items.find((x) => x.uuid === execution);
          return e && e.status !== 'running' ? e : undefined;
        },
        30_000,
      );
      expect(seen).toMatchObject({ status: 'success', exit_code: 0, logs: 'mcp-ok' });

      // Another team: its own root token, the first team's app and task.
      const other = await s.team('Other Team');
      const as = (method: string, path: string, body?: unknown) => call(s.url, method, `/api/v1${path}`, { token: other.rootToken, body });
      const base = `/applications/${app}/scheduled-tasks`;
      const answers = [
        await as('GET', base),
        await as('POST', base, { name: 'x', command: 'id', frequency: 'daily' }),
        await as('PATCH', `${base}/${task}`, { command: 'id' }),
        await as('GET', `${base}/${task}/executions`),
        await as('POST', `${base}/${task}/execute`),
        await as('DELETE', `${base}/${task}`),
      ];
      for (const a of answers) expect([a.status, a.json]).toEqual([404, { message: 'Resource not found.' }]);
      // The same through its MCP door.
      const theirs = await httpClient('v2-modern', s.url, other.rootToken);
      try {
        const r = await theirs.callTool('execute_application_scheduled_task', { uuid: app, task_uuid: task });
        expect(r.isError).toBe(true);
        expect(r.content[0]!.text).toContain('Resource not found.');
      } finally {
        await theirs.close();
      }
      // A task of one resource is not reachable through another of the same team.
      const { uuid: second } = await api.ok('POST', '/applications/dockerimage', {
        project_uuid: p.project,
        server_uuid: p.serverA,
        destination_uuid: p.destA,
        environment_name: 'production',
        docker_registry_image_name: 'nginx',
      });
      expect((await api.req('GET', `/applications/${second}/scheduled-tasks/${task}/executions`)).status).toBe(404);
      // Nothing ran for the other team: the task still has its one run.
      expect(await executions('applications', app, task)).toHaveLength(1);
    } finally {
      await mcp?.close();
    }
  }, 90_000);

  it('two berth instances on one store run each firing once', async () => {
    // A second `berth serve` process on the same store, ticking as often.
    const second: ServeProcess = await spawnServe(s.dataDir, { BERTH_JOB_LEASE_MS: String(LEASE_MS), BERTH_SCHEDULE_TICK_MS: '300', BERTH_HELPER_IMAGE: ENGINE_IMAGE, API_RATE_LIMIT: '0' });
    try {
      const tasks: string[] = [];
      for (let i = 0; i < 8; i++) tasks.push((await api.ok('POST', `/applications/${app}/scheduled-tasks`, { name: `twice-${i}`, command: `echo run-${i}`, frequency: 'every_minute' })).uuid);
      // Both instances tick; the tasks become due for the current minute at once.
      await s.db
        .updateTable('scheduled_tasks')
        .set({ created_at: new Date(Date.now() - 120_000).toISOString() })
        .where('uuid', 'in', tasks)
        .execute();
      for (const t of tasks) await until(`a run of ${t}`, async () => ((await executions('applications', app, t)).some((e: { status: string }) => e.status !== 'running') ? true : undefined), 30_000);
      await new Promise((r) => setTimeout(r, LEASE_MS * 2));
      for (const t of tasks) {
        // A minute boundary may have started another firing meanwhile: it ends before the checks.
        const runs = await until(
          `the runs of ${t} ended`,
          async () => {
            const all = await executions('applications', app, t);
            return all.some((e: { status: string }) => e.status === 'running') ? undefined : all;
          },
          30_000,
        );
        const slots = runs.map((e: { scheduled_for: string }) => e.scheduled_for);
        // One run per firing (a minute boundary may have passed meanwhile: that is another firing).
        expect(new Set(slots).size, JSON.stringify(runs)).toBe(slots.length);
        expect(
          runs.filter((e: { status: string }) => e.status !== 'success'),
          JSON.stringify(runs),
        ).toEqual([]);
        // One `job` entry per run, written by the instance that ran it.
        const entries = await s.db.selectFrom('audit_log').select('started_uuid').where('door', '=', 'job').where('targets', 'like', `%"${t}"%`).execute();
        expect(entries.map((e) => e.started_uuid).sort()).toEqual(runs.map((e: { uuid: string }) => e.uuid).sort());
      }
    } finally {
      await second.stop();
    }
  }, 90_000);

  it("a migrated application's task runs on its new server; deleting the application deletes its tasks", async () => {
    const { uuid: moved } = await deployAppWithVolume(api, p, 'task-moves');
    const task = (await api.ok('POST', `/applications/${moved}/scheduled-tasks`, { name: 'where', command: 'echo here', frequency: 'daily' })).uuid;
    const m = await api.ok('POST', `/applications/${moved}/migrate`, { destination_uuid: p.destB, start_on_destination: true });
    expect((await migrationEnded(api, m.migration_uuid, 90_000)).status).toBe('finished');
    // start_on_destination starts it on b after the switch: the task needs it running.
    await until('the app running on b', async () => (String((await api.ok('GET', `/applications/${moved}`)).status).startsWith('running') ? true : undefined), 60_000, 500);
    const there = await runOnce('applications', moved, task);
    expect(there, JSON.stringify(there)).toMatchObject({ status: 'success', logs: 'here\n' });
    expect(engines.podman('b', ['ps', '--format', '{{.Names}}']).split('\n')).toContain(moved);

    const id = (await s.db.selectFrom('resources').select('id').where('uuid', '=', moved).executeTakeFirstOrThrow()).id;
    await api.ok('DELETE', `/applications/${moved}`);
    expect(await s.db.selectFrom('scheduled_tasks').select('id').where('resource_id', '=', id).execute()).toEqual([]);
    expect((await api.req('GET', `/applications/${moved}/scheduled-tasks`)).status).toBe(404);
  }, 180_000);
});
