/**
 * Commands in a swarm application (a real one-node swarm of its own dockerd, local images only):
 * a scheduled task, on demand and on its schedule, runs in one running task container of the
 * service (the lowest slot), its output recorded; with no task running the run fails saying so.
 * The engine's CLI is the ground truth for which container that is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, dockerdAvailable, useDockerd } from '../helpers/dockerd.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, until } from './support.js';

describe.skipIf(!dockerdAvailable)('commands in a swarm application (a real one-node swarm)', () => {
  const dockerd = useDockerd({ swarm: true });
  let s: TestServer;
  let api: Api;
  let app: string;
  let task: string;
  const [repo, tag] = BUSYBOX_IMAGE.split(':') as [string, string];

  /** The service's running task containers on the engine: short id (a task's hostname) by slot. */
  const taskContainers = () =>
    dockerd
      .docker(['ps', '--no-trunc', '--filter', `label=com.docker.swarm.service.name=${app}`, '--format', '{{.ID}} {{.Label "com.docker.swarm.task.name"}}'])
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [id, name] = l.split(' ') as [string, string];
        return { host: id.slice(0, 12), slot: Number(name.split('.')[1]) };
      })
      .sort((a, b) => a.slot - b.slot);

  const executions = () => api.ok('GET', `/applications/${app}/scheduled-tasks/${task}/executions`);
  const runNow = async () => {
    const r = await api.ok('POST', `/applications/${app}/scheduled-tasks/${task}/execute`);
    return until(
      'the run',
      async () => {
        const e = (await executions()).find((x: { uuid: string }) => x.uuid === r.execution_uuid);
        return e && e.status !== 'running' ? e : undefined;
      },
      30_000,
    );
  };

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0, jobLeaseMs: 1_500, scheduleTickMs: 300 });
    api = new Api(s.url, s.rootToken);
    const server = (await api.ok('POST', '/servers', { ip: '127.0.0.1', name: 'swarm', engine_endpoint: `unix://${dockerd.socket}` })).uuid;
    expect(await api.ok('POST', `/servers/${server}/validate`)).toMatchObject({ is_swarm_manager: true });
    const project = (await api.ok('POST', '/projects', { name: 'swarm-exec' })).uuid;
    const r = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: project,
      server_uuid: server,
      environment_name: 'production',
      name: 'two-tasks',
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
      ports_exposes: '8080',
      custom_docker_run_options: `--entrypoint "sh -c 'trap exit TERM; while :; do sleep 1; done'"`,
      swarm_replicas: 2,
      instant_deploy: true,
    });
    app = r.uuid;
    await deployed(api, r.deployment_uuid, 120_000);
    task = (await api.ok('POST', `/applications/${app}/scheduled-tasks`, { name: 'where', command: 'echo "ran in $(hostname)"; echo note >&2', frequency: 'every_minute' })).uuid;
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('a run on demand answers from the running task of the lowest slot, every time', async () => {
    const tasks = taskContainers();
    expect(tasks.map((t) => t.slot)).toEqual([1, 2]);
    const first = await runNow();
    expect(first, JSON.stringify(first)).toMatchObject({ status: 'success', exit_code: 0 });
    expect(first.message).toContain(`ran in ${tasks[0]!.host}`);
    expect(first.logs).toContain('note');
    const second = await runNow();
    expect(second.message).toContain(`ran in ${tasks[0]!.host}`);
  }, 90_000);

  it('a scheduled firing runs in a task container and records its output', async () => {
    // The task is made to look two minutes old, so the current minute is due now.
    await s.db
      .updateTable('scheduled_tasks')
      .set({ created_at: new Date(Date.now() - 120_000).toISOString() })
      .where('uuid', '=', task)
      .execute();
    const fired = await until('a scheduled run', async () => (await executions()).find((e: { scheduled_for: string | null; status: string }) => e.scheduled_for && e.status !== 'running'), 30_000);
    expect(fired).toMatchObject({ status: 'success', exit_code: 0 });
    expect(fired.message).toContain(`ran in ${taskContainers()[0]!.host}`);
    await api.ok('PATCH', `/applications/${app}/scheduled-tasks/${task}`, { enabled: false });
  }, 90_000);

  it('exported and imported into another berth, the server validates as a manager, its destination stays swarm, and a run there reaches the same task', async () => {
    const server = (await api.ok('GET', `/applications/${app}`)).server_uuid as string;
    const bundle = await api.ok('GET', `/servers/${server}/export`);
    const other = await startTestServer({ apiRateLimit: 0 });
    try {
      const o = new Api(other.url, other.rootToken);
      const imported = await o.ok('POST', '/servers/import', { bundle });
      expect(imported).toMatchObject({ server_uuid: server, created: { resources: 1 } });
      expect(await o.ok('GET', `/servers/${server}/destinations`)).toEqual([expect.objectContaining({ network: 'berth', type: 'swarm' })]);
      // Validated on the engine: still a manager, and the destination that places the application keeps its type.
      expect(await o.ok('POST', `/servers/${server}/validate`)).toMatchObject({ is_usable: true, is_swarm_manager: true });
      expect((await o.ok('GET', `/servers/${server}/destinations`))[0].type).toBe('swarm');
      expect(await o.ok('GET', `/applications/${app}`)).toMatchObject({ swarm_replicas: 2 });
      const r = await o.ok('POST', `/applications/${app}/scheduled-tasks/${task}/execute`);
      const run = await until(
        'the run on the importing instance',
        async () => {
          const e = (await o.ok('GET', `/applications/${app}/scheduled-tasks/${task}/executions`)).find((x: { uuid: string }) => x.uuid === r.execution_uuid);
          return e && e.status !== 'running' ? e : undefined;
        },
        30_000,
      );
      expect(run, JSON.stringify(run)).toMatchObject({ status: 'success' });
      expect(run.message).toContain(`ran in ${taskContainers()[0]!.host}`);
    } finally {
      await other.stop();
    }
  }, 90_000);

  it('scaled to 0, a run fails saying no task runs', async () => {
    await api.ok('PATCH', `/applications/${app}`, { swarm_replicas: 0 });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${app}`)).deployments[0].deployment_uuid, 120_000);
    await until('no task container', async () => (taskContainers().length === 0 ? true : undefined), 30_000, 250);
    const run = await runNow();
    expect(run).toMatchObject({ status: 'failed', exit_code: null });
    expect(run.message).toMatch(new RegExp(`^No task of the swarm service ${app} runs on this node .*deploy or start it, then run the command again`));
  }, 180_000);
});
