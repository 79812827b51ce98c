/**
 * Applications on a real Docker Swarm (a one-node swarm of its own dockerd, Debian's docker.io,
 * local images only), through berth's HTTP API; the engine's own CLI and Engine API are the
 * ground truth.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, dockerdAvailable, useDockerd } from '../helpers/dockerd.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, until } from './support.js';

/** The engine's tasks of a service, asked over its socket (not through berth, and without blocking the loop). */
function tasks(socket: string, service: string): Promise<{ DesiredState: string; Status: { State: string }; Spec: { ContainerSpec: { Image: string } } }[]> {
  const filters = encodeURIComponent(JSON.stringify({ service: [service], 'desired-state': ['running'] }));
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath: socket, path: `/v1.41/tasks?filters=${filters}` }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`${res.statusCode} ${body}`))));
      })
      .on('error', reject);
  });
}
const running = async (socket: string, service: string) => (await tasks(socket, service)).filter((t) => t.Status.State === 'running');

describe.skipIf(!dockerdAvailable)('applications on Docker Swarm (a real one-node swarm)', () => {
  const dockerd = useDockerd({ swarm: true });
  let s: TestServer;
  let api: Api;
  let server: string;
  let project: string;
  let app: string;
  const [repo, tag] = BUSYBOX_IMAGE.split(':') as [string, string];

  const deploy = async (uuid: string) => deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 120_000);
  const statusOf = async (uuid: string) => (await api.ok('GET', `/applications/${uuid}`)).status as string;

  beforeAll(async () => {
    // A second tag of the same image: an image change the swarm rolls out.
    dockerd.docker(['tag', BUSYBOX_IMAGE, `${repo}:v2`]);
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    server = (await api.ok('POST', '/servers', { ip: '127.0.0.1', name: 'swarm', engine_endpoint: `unix://${dockerd.socket}` })).uuid;
    project = (await api.ok('POST', '/projects', { name: 'swarm' })).uuid;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('validate reports a swarm manager; its destination is of type swarm; what does not run on swarm is refused by name', async () => {
    const before = await api.ok('GET', `/servers/${server}/destinations`);
    expect(before.map((d: { type: string }) => d.type)).toEqual(['standalone']);
    const v = await api.ok('POST', `/servers/${server}/validate`);
    expect(v).toMatchObject({ is_reachable: true, is_usable: true, is_swarm_manager: true, is_swarm_worker: false });
    expect(v.validation_logs).toMatch(/Docker Swarm: this node is a manager \(1 node/);
    expect(await api.ok('GET', `/servers/${server}`)).toMatchObject({ is_swarm_manager: true, is_swarm_worker: false });
    const dests = await api.ok('GET', `/servers/${server}/destinations`);
    expect(dests).toHaveLength(1);
    expect(dests[0]).toMatchObject({ network: 'berth', type: 'swarm' });
    // A new destination on a manager is swarm by default; the engine's own networks are refused.
    expect(await api.ok('POST', `/servers/${server}/destinations`, { network: 'berth-extra' })).toMatchObject({ type: 'swarm' });
    expect((await api.req('POST', `/servers/${server}/destinations`, { network: 'ingress', type: 'swarm' })).status).toBe(422);
    const place = { project_uuid: project, server_uuid: server, environment_name: 'production', destination_uuid: dests[0].uuid };
    // A service (compose) is taken (it runs as a stack: swarm-stack.test.ts); what a stack cannot run is refused by its key.
    const svc = await api.req('POST', '/services', { ...place, docker_compose_raw: `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n` });
    expect(svc.status).toBe(201);
    await api.ok('DELETE', `/services/${svc.json.uuid}`);
    const misfit = await api.req('POST', '/services', { ...place, docker_compose_raw: `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n    network_mode: none\n` });
    expect(misfit.status).toBe(422);
    expect(JSON.stringify(misfit.json.errors.docker_compose_raw)).toContain('services.web.network_mode');
    const db = await api.req('POST', '/databases/postgresql', { ...place });
    expect(db.status).toBe(422);
    expect(JSON.stringify(db.json.errors)).toContain('swarm destination');
    const bad = await api.req('POST', '/applications/dockerimage', { ...place, docker_registry_image_name: repo, swarm_placement_constraints: Buffer.from('replicas: 3\n').toString('base64') });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.json.errors.swarm_placement_constraints)).toContain('swarm_replicas');
    const outOfRange = await api.req('POST', '/applications/dockerimage', { ...place, docker_registry_image_name: repo, swarm_replicas: -1 });
    expect(outOfRange.status).toBe(422);
  });

  it('an application with 3 replicas runs 3 tasks, start-first with rollback, healthy; PATCH to 5 and deploy gives 5', async () => {
    const dest = (await api.ok('GET', `/servers/${server}/destinations`)).find((d: { network: string }) => d.network === 'berth').uuid;
    const serve = `echo task up; mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www`;
    const r = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: project,
      server_uuid: server,
      destination_uuid: dest,
      environment_name: 'production',
      name: 'replicated',
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
      ports_exposes: '8080',
      custom_docker_run_options: `--entrypoint "sh -c '${serve}'"`,
      health_check_enabled: true,
      health_check_path: '/',
      health_check_interval: 1,
      health_check_start_period: 1,
      limits_memory: '64m',
      limits_memory_reservation: '16m',
      swarm_replicas: 3,
      swarm_placement_constraints: Buffer.from('placement:\n  constraints:\n    - node.role == manager\n').toString('base64'),
      instant_deploy: true,
    });
    app = r.uuid;
    const d = await deployed(api, r.deployment_uuid, 120_000);
    expect(d.logs).toContain('created swarm service');
    const view = await api.ok('GET', `/applications/${app}`);
    expect(view).toMatchObject({ swarm_replicas: 3, swarm_placement_constraints: Buffer.from('placement:\n  constraints:\n    - node.role == manager').toString('base64') });
    // Ground truth: the engine's service and its tasks.
    const spec = JSON.parse(dockerd.docker(['service', 'inspect', app, '--format', '{{json .Spec}}']));
    expect(spec.Mode.Replicated.Replicas).toBe(3);
    expect(spec.UpdateConfig).toMatchObject({ Parallelism: 1, Order: 'start-first', FailureAction: 'rollback' });
    expect(spec.RollbackConfig).toMatchObject({ Parallelism: 1, Order: 'start-first' });
    expect(spec.TaskTemplate.Placement.Constraints).toEqual(['node.role == manager']);
    expect(spec.TaskTemplate.Resources).toMatchObject({ Limits: { MemoryBytes: 64 * 1024 * 1024 }, Reservations: { MemoryBytes: 16 * 1024 * 1024 } });
    expect(spec.TaskTemplate.ContainerSpec.Labels).toMatchObject({ 'berth.managed': 'true', 'berth.resource': app });
    expect(spec.TaskTemplate.ContainerSpec.Healthcheck.Test[0]).toBe('CMD-SHELL');
    expect(JSON.parse(dockerd.docker(['network', 'inspect', 'berth', '--format', '{{json .}}']))).toMatchObject({ Driver: 'overlay', Attachable: true });
    expect(await running(dockerd.socket, app)).toHaveLength(3);
    await until('running:healthy', async () => ((await statusOf(app)) === 'running:healthy' ? true : undefined), 30_000, 250);

    // Logs across replicas, each line with its task.
    const logs = await until(
      'three tasks in the logs',
      async () => {
        const l = (await api.ok('GET', `/applications/${app}/logs?lines=50`)).logs as string;
        return new Set(
          l
            .split('\n')
            .filter((x) => x.includes('task up'))
            .map((x) => x.slice(0, 14)),
        ).size === 3
          ? l
          : undefined;
      },
      20_000,
      500,
    );
    expect(logs).toMatch(/^\[[a-z0-9]{12}\] task up/m);

    await api.ok('PATCH', `/applications/${app}`, { swarm_replicas: 5 });
    await deploy(app);
    expect(await running(dockerd.socket, app)).toHaveLength(5);
    expect(JSON.parse(dockerd.docker(['service', 'inspect', app, '--format', '{{json .Spec.Mode}}'])).Replicated.Replicas).toBe(5);
    await until('running:healthy at 5', async () => ((await statusOf(app)) === 'running:healthy' ? true : undefined), 30_000, 250);
  }, 240_000);

  it('an image change rolls start-first: never fewer than 5 tasks run, and all 5 end on the new image', async () => {
    let min = Number.POSITIVE_INFINITY;
    let samples = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        min = Math.min(min, (await running(dockerd.socket, app)).length);
        samples++;
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    await api.ok('PATCH', `/applications/${app}`, { docker_registry_image_tag: 'v2' });
    const d = await deploy(app);
    sampling = false;
    await sampler;
    expect(d.logs).toContain('start-first');
    expect(samples).toBeGreaterThan(4);
    expect(min).toBeGreaterThanOrEqual(5);
    const now = await running(dockerd.socket, app);
    expect(now).toHaveLength(5);
    expect(new Set(now.map((t) => t.Spec.ContainerSpec.Image))).toEqual(new Set([`${repo}:v2`]));
  }, 240_000);

  it('stop leaves no task running and status exited; start brings 5 back; delete removes the service, its volumes and network', async () => {
    const stop = await api.ok('POST', `/applications/${app}/stop`);
    await deployed(api, stop.deployment_uuid, 120_000);
    expect(await running(dockerd.socket, app)).toHaveLength(0);
    expect(dockerd.docker(['ps', '-q', '--filter', `label=com.docker.swarm.service.name=${app}`]).trim()).toBe('');
    await until('exited', async () => ((await statusOf(app)) === 'exited' ? true : undefined), 20_000, 250);

    const start = await api.ok('POST', `/applications/${app}/start`);
    await deployed(api, start.deployment_uuid, 120_000);
    expect(await running(dockerd.socket, app)).toHaveLength(5);

    const del = await api.ok('DELETE', `/applications/${app}?delete_volumes=true&delete_connected_networks=true`);
    expect(del.removed).toContain(`removed swarm service ${app}`);
    expect(dockerd.docker(['service', 'ls', '-q', '--filter', `name=${app}`]).trim()).toBe('');
    expect(dockerd.docker(['ps', '-aq', '--filter', `label=com.docker.swarm.service.name=${app}`]).trim()).toBe('');
    // Joined, so a failure shows every line (a kept network says what kept it).
    expect(del.removed.join('\n')).toContain('removed network berth');
    expect(dockerd.docker(['network', 'ls', '-q', '--filter', 'name=^berth$']).trim()).toBe('');
  }, 240_000);
});
