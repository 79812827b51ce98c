/**
 * An application's domains on every copy (additional destinations): two real Docker Engines, each
 * with berth's Caddy proxy on loopback ports of its own. The application runs on a and on b; each
 * server's proxy answers its domains from the copy on that server (the body is the answering
 * container's hostname, read from its own engine), as a load balancer or DNS in front of both
 * would need. A domain change moves on both at once; removing the destination, and deleting the
 * application, take the route away from b's proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, CADDY_IMAGE, dockerdAvailable, useDockerd, type TestDockerd } from '../helpers/dockerd.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { answers, ask, freePort } from './proxy-support.js';
import { Api, deployed, until } from './support.js';

describe.skipIf(!dockerdAvailable)('an application on two servers answers at its domains on both (Caddy on two real Docker Engines)', () => {
  const da = useDockerd();
  // Its own address pool: the two daemons' bridges never share a subnet on this host.
  const db = useDockerd({ pool: 'base=10.217.0.0/16,size=24' });
  let s: TestServer;
  let api: Api;
  let project: string;
  const servers: Record<'a' | 'b', { uuid: string; dest: string; port: number }> = {} as never;

  async function register(name: 'a' | 'b', d: TestDockerd) {
    const port = await freePort();
    const { uuid } = await api.ok('POST', '/servers', { ip: '127.0.0.1', name: `dockerd-${name}`, engine_endpoint: `unix://${d.socket}` });
    expect(await api.ok('POST', `/servers/${uuid}/validate`)).toMatchObject({ is_reachable: true, is_usable: true });
    await api.ok('PUT', `/servers/${uuid}/proxy/configuration`, {
      configuration: Buffer.from(`services:\n  caddy:\n    image: ${CADDY_IMAGE}\n    ports:\n      - 127.0.0.1:${port}:80\n`).toString('base64'),
    });
    await api.ok('PATCH', `/servers/${uuid}/proxy`, { proxy_type: 'caddy' });
    const dest = (await api.ok('GET', `/servers/${uuid}/destinations`))[0].uuid as string;
    servers[name] = { uuid, dest, port };
  }

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    await register('a', da);
    await register('b', db);
    project = (await api.ok('POST', '/projects', { name: 'copies-domains' })).uuid;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** The n-th deployment of the application on b, once it finished. */
  async function copyDeployed(uuid: string, n: number): Promise<void> {
    const onB = async () => (await api.ok('GET', `/deployments/applications/${uuid}?take=100`)).deployments.filter((d: any) => d.server_uuid === servers.b.uuid);
    const d = await until(`deployment ${n} on b`, async () => ((await onB()).length >= n ? (await onB())[0] : undefined), 60_000);
    await deployed(api, d.deployment_uuid, 60_000);
  }
  const deploy = async (uuid: string, n: number) => {
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);
    await copyDeployed(uuid, n);
  };
  /** What the container of the application answers with on an engine: its hostname there. */
  const hostnameOn = (d: TestDockerd, uuid: string) => d.docker(['inspect', '--format', '{{.Config.Hostname}}', uuid]).trim();

  it('each server’s proxy routes the domains to its own copy; a domain change moves on both; removal and delete take b’s route away', async () => {
    const [repo, tag] = BUSYBOX_IMAGE.split(':');
    const serve = 'mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www';
    const { uuid } = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: project,
      server_uuid: servers.a.uuid,
      destination_uuid: servers.a.dest,
      environment_name: 'production',
      name: 'everywhere',
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
      ports_exposes: '8080',
      domains: 'http://copy.test',
      custom_docker_run_options: `--entrypoint "sh -c '${serve}'"`,
    });
    expect((await api.req('POST', `/applications/${uuid}/destinations`, { destination_uuid: servers.b.dest })).status).toBe(201);
    await deploy(uuid, 1);

    const onA = hostnameOn(da, uuid);
    const onB = hostnameOn(db, uuid);
    expect(onA).not.toBe(onB);
    expect((await answers(servers.a.port, 'copy.test', (a) => a.status === 200)).body).toBe(onA);
    expect((await answers(servers.b.port, 'copy.test', (a) => a.status === 200)).body).toBe(onB);
    expect((await ask(servers.b.port, 'nobody.test')).status).toBe(404);

    // A domain change of the running application is routed at once on both servers.
    await api.ok('PATCH', `/applications/${uuid}`, { domains: 'http://moved.test' });
    expect((await answers(servers.a.port, 'moved.test', (a) => a.status === 200)).body).toBe(onA);
    expect((await answers(servers.b.port, 'moved.test', (a) => a.status === 200)).body).toBe(onB);
    expect((await ask(servers.b.port, 'copy.test')).status).toBe(404);

    // Removing the destination: b's proxy no longer routes it; a's still does.
    await api.ok('DELETE', `/applications/${uuid}/destinations/${servers.b.dest}`);
    expect((await answers(servers.b.port, 'moved.test', (a) => a.status === 404)).status).toBe(404);
    expect((await ask(servers.a.port, 'moved.test')).body).toBe(onA);

    // Attached and deployed again: b answers from its new copy; deleting the application takes both routes away.
    await api.ok('POST', `/applications/${uuid}/destinations`, { destination_uuid: servers.b.dest });
    await deploy(uuid, 2);
    expect((await answers(servers.b.port, 'moved.test', (a) => a.status === 200)).body).toBe(hostnameOn(db, uuid));
    await api.ok('DELETE', `/applications/${uuid}`);
    await answers(servers.b.port, 'moved.test', (a) => a.status === 404);
    await answers(servers.a.port, 'moved.test', (a) => a.status === 404);
  }, 300_000);
});
