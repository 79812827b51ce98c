/**
 * A service (compose) on a real Docker Swarm runs as a stack, as `docker stack deploy` would run
 * it (a one-node swarm of its own dockerd, local images only), through berth's HTTP API; the
 * engine's own CLI is the ground truth.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, dockerdAvailable, useDockerd } from '../helpers/dockerd.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, until, volumeNames } from './support.js';

/**
 * web serves a page; client fetches it by web's compose name into its named volume, healthy once
 * it has. web's name resolves to its tasks (dnsrr): the test engine runs without iptables, so a
 * swarm virtual address (vip, the default) is not routed here.
 */
const COMPOSE = `services:
  web:
    image: ${BUSYBOX_IMAGE}
    command: ["sh", "-c", "mkdir -p /www && echo hello-from-web > /www/index.html && echo web up && exec httpd -f -p 8080 -h /www"]
    healthcheck:
      test: ["CMD-SHELL", "wget -q -O /dev/null http://127.0.0.1:8080/"]
      interval: 1s
      start_period: 1s
    deploy:
      replicas: 2
      endpoint_mode: dnsrr
      resources:
        limits:
          memory: 64m
        reservations:
          memory: 16m
  client:
    image: ${BUSYBOX_IMAGE}
    command: ["sh", "-c", "while :; do wget -q -O /data/got http://web:8080/ && echo fetched; sleep 1; done 2>&1"]
    environment:
      GREETING: hi
    volumes:
      - data:/data
    healthcheck:
      test: ["CMD-SHELL", "grep -q hello-from-web /data/got"]
      interval: 1s
      retries: 30
    depends_on:
      web:
        condition: service_healthy
volumes:
  data:
`;

describe.skipIf(!dockerdAvailable)('services (compose) on Docker Swarm run as a stack (a real one-node swarm)', () => {
  const dockerd = useDockerd({ swarm: true });
  let s: TestServer;
  let api: Api;
  let place: Record<string, string>;
  let svc: string;

  const statusOf = async (uuid: string) => (await api.ok('GET', `/services/${uuid}`)).status as string;
  /** The stack's services as the engine lists them: name → replicas. */
  const stackServices = (uuid: string): Record<string, string> =>
    Object.fromEntries(
      dockerd
        .docker(['service', 'ls', '--filter', `label=com.docker.stack.namespace=${uuid}`, '--format', '{{.Name}} {{.Replicas}}'])
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ') as [string, string]),
    );
  const tasksRunning = (name: string) =>
    dockerd
      .docker(['service', 'ps', name, '--filter', 'desired-state=running', '--format', '{{.CurrentState}}'])
      .split('\n')
      .filter((l) => l.startsWith('Running')).length;

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    const server = (await api.ok('POST', '/servers', { ip: '127.0.0.1', name: 'swarm', engine_endpoint: `unix://${dockerd.socket}` })).uuid;
    const project = (await api.ok('POST', '/projects', { name: 'stack' })).uuid;
    expect(await api.ok('POST', `/servers/${server}/validate`)).toMatchObject({ is_swarm_manager: true });
    const dest = (await api.ok('GET', `/servers/${server}/destinations`))[0];
    expect(dest).toMatchObject({ type: 'swarm', network: 'berth' });
    place = { project_uuid: project, server_uuid: server, environment_name: 'production', destination_uuid: dest.uuid };
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('what a stack cannot run is refused by its compose key, at create and at update', async () => {
    const ipc = await api.req('POST', '/services', {
      ...place,
      docker_compose_raw: `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n    ipc: private\n  db:\n    image: ${BUSYBOX_IMAGE}\n    network_mode: none\n`,
    });
    expect(ipc.status).toBe(422);
    const said = JSON.stringify(ipc.json.errors.docker_compose_raw);
    expect(said).toContain('services.web.ipc');
    expect(said).toContain('services.db.network_mode');
    expect(said).toContain('swarm');
    const port = await api.req('POST', '/services', { ...place, docker_compose_raw: `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n    ports:\n      - 127.0.0.1:8080:80\n` });
    expect(port.status).toBe(422);
    expect(JSON.stringify(port.json.errors.docker_compose_raw)).toContain('services.web.ports');
    const dnsrr = await api.req('POST', '/services', {
      ...place,
      docker_compose_raw: `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n    ports:\n      - 8080:80\n    deploy:\n      endpoint_mode: dnsrr\n`,
    });
    expect(dnsrr.status).toBe(422);
    expect(JSON.stringify(dnsrr.json.errors.docker_compose_raw)).toContain('services.web.deploy: endpoint_mode dnsrr');
    // A file that fits is taken; replacing it with one that does not is refused the same way.
    const ok = await api.ok('POST', '/services', { ...place, name: 'fits', docker_compose_raw: `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n` });
    const upd = await api.req('PATCH', `/services/${ok.uuid}`, { docker_compose_raw: `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n    uts: host\n` });
    expect(upd.status).toBe(422);
    await api.ok('DELETE', `/services/${ok.uuid}`);
  });

  it('deploys each compose service as <uuid>_<service> with the namespace label; healthy once the client reached web by its name', async () => {
    const r = await api.ok('POST', '/services', { ...place, name: 'pair', docker_compose_raw: COMPOSE, instant_deploy: true });
    svc = r.uuid;
    const d = await deployed(api, r.deployment_uuid, 180_000);
    expect(d.logs).toContain(`created swarm service ${svc}_web`);
    expect(d.logs).toContain(`created swarm service ${svc}_client`);
    // depends_on: web's tasks ran before client was made.
    expect(d.logs.indexOf(`${svc}_web: tasks running 2/2`)).toBeLessThan(d.logs.indexOf(`created swarm service ${svc}_client`));
    expect(stackServices(svc)).toEqual({ [`${svc}_web`]: '2/2', [`${svc}_client`]: '1/1' });

    const web = JSON.parse(dockerd.docker(['service', 'inspect', `${svc}_web`, '--format', '{{json .Spec}}']));
    expect(web.Labels).toMatchObject({ 'com.docker.stack.namespace': svc, 'berth.managed': 'true', 'berth.resource': svc });
    expect(web.TaskTemplate.ContainerSpec.Labels).toMatchObject({ 'com.docker.stack.namespace': svc, 'berth.resource': svc, 'berth.container': 'web' });
    expect(web.TaskTemplate.Networks[0].Aliases).toContain('web');
    expect(web.TaskTemplate.Resources).toMatchObject({ Limits: { MemoryBytes: 64 * 1024 * 1024 }, Reservations: { MemoryBytes: 16 * 1024 * 1024 } });
    expect(web.EndpointSpec.Mode).toBe('dnsrr');
    expect(web.UpdateConfig).toMatchObject({ Order: 'start-first', FailureAction: 'rollback' });
    expect(web.TaskTemplate.ContainerSpec.Healthcheck.Test).toEqual(['CMD-SHELL', 'wget -q -O /dev/null http://127.0.0.1:8080/']);
    const client = JSON.parse(dockerd.docker(['service', 'inspect', `${svc}_client`, '--format', '{{json .Spec}}']));
    expect(client.TaskTemplate.ContainerSpec.Env).toContain('GREETING=hi');
    const volume = (await volumeNames(api, 'services', svc)).data!;
    expect(client.TaskTemplate.ContainerSpec.Mounts).toEqual([expect.objectContaining({ Type: 'volume', Source: volume, Target: '/data' })]);
    expect(JSON.parse(dockerd.docker(['network', 'inspect', 'berth', '--format', '{{json .}}']))).toMatchObject({ Driver: 'overlay', Attachable: true });

    await until('running:healthy', async () => ((await statusOf(svc)) === 'running:healthy' ? true : undefined), 30_000, 250);
    // Ground truth of the name lookup: what client fetched from web over the overlay, in its named volume.
    expect(dockerd.docker(['run', '--rm', '-v', `${volume}:/data`, BUSYBOX_IMAGE, 'cat', '/data/got']).trim()).toBe('hello-from-web');
    // Each compose service's status, as the standalone path gives its parts.
    const view = await api.ok('GET', `/services/${svc}`);
    expect(view.applications.map((p: { name: string; status: string }) => [p.name, p.status]).sort()).toEqual([
      ['client', 'running:healthy'],
      ['web', 'running:healthy'],
    ]);

    // Logs of one compose service across its replicas, each line with its task.
    const logs = await until(
      "both of web's tasks in its logs",
      async () => {
        const l = (await api.ok('GET', `/services/${svc}/logs?sub_service_name=web&lines=50`)).logs as string;
        return new Set(
          l
            .split('\n')
            .filter((x) => x.includes('web up'))
            .map((x) => x.slice(0, 14)),
        ).size === 2
          ? l
          : undefined;
      },
      20_000,
      500,
    );
    expect(logs).toMatch(/^\[[a-z0-9]{12}\] web up/m);
    expect(logs).not.toContain('fetched');
    const all = (await api.ok('GET', `/services/${svc}/logs?lines=50`)).logs as string;
    expect(all).toMatch(/^\[client [a-z0-9]{12}\] fetched/m);
  }, 240_000);

  it('stop scales every service to 0 (exited, no task); start brings them back; restart replaces the tasks', async () => {
    const stop = await api.ok('POST', `/services/${svc}/stop`);
    await deployed(api, stop.deployment_uuid, 120_000);
    expect(stackServices(svc)).toEqual({ [`${svc}_web`]: '0/0', [`${svc}_client`]: '0/0' });
    expect(dockerd.docker(['ps', '-q', '--filter', `label=com.docker.stack.namespace=${svc}`]).trim()).toBe('');
    await until('exited', async () => ((await statusOf(svc)) === 'exited' ? true : undefined), 20_000, 250);

    const start = await api.ok('POST', `/services/${svc}/start`);
    await deployed(api, start.deployment_uuid, 180_000);
    expect(tasksRunning(`${svc}_web`)).toBe(2);
    expect(tasksRunning(`${svc}_client`)).toBe(1);
    await until('running:healthy again', async () => ((await statusOf(svc)) === 'running:healthy' ? true : undefined), 30_000, 250);

    const before = dockerd
      .docker(['ps', '-q', '--filter', `label=com.docker.swarm.service.name=${svc}_web`])
      .trim()
      .split('\n')
      .sort();
    const restart = await api.ok('POST', `/services/${svc}/restart`);
    await deployed(api, restart.deployment_uuid, 180_000);
    // Every task replaced; the old containers stop a moment after the new ones run.
    const webIds = () =>
      dockerd
        .docker(['ps', '-q', '--filter', `label=com.docker.swarm.service.name=${svc}_web`])
        .trim()
        .split('\n')
        .sort();
    const after = await until('two new web containers only', async () => (webIds().length === 2 ? webIds() : undefined), 30_000, 250);
    expect(after.some((id) => before.includes(id))).toBe(false);
  }, 400_000);

  it('delete with delete_volumes removes every service of the stack, its volume and the network', async () => {
    const volume = (await volumeNames(api, 'services', svc)).data!;
    const del = await api.ok('DELETE', `/services/${svc}?delete_volumes=true&delete_connected_networks=true`);
    const said = (del.removed ?? []).join('\n');
    expect(said).toContain(`removed swarm service ${svc}_web`);
    expect(said).toContain(`removed swarm service ${svc}_client`);
    expect(said).toContain(`removed volume ${volume}`);
    expect(said).toContain('removed network berth');
    expect(stackServices(svc)).toEqual({});
    expect(dockerd.docker(['ps', '-aq', '--filter', `label=com.docker.stack.namespace=${svc}`]).trim()).toBe('');
    expect(dockerd.docker(['volume', 'ls', '-q', '--filter', `name=${volume}`]).trim()).toBe('');
    expect(dockerd.docker(['network', 'ls', '-q', '--filter', 'name=^berth$']).trim()).toBe('');
  }, 240_000);
});
