/**
 * Applications at their domains, through a real Caddy proxy on a real Docker Engine (its own
 * dockerd, bridge networking; Caddy built from Debian's package): requests go to the proxy's
 * loopback ports with a Host header (or a TLS server name), as a browser's would after DNS.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, CADDY_IMAGE, dockerdAvailable, useDockerd } from '../helpers/dockerd.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, until } from './support.js';
import { answers, ask, freePort } from './proxy-support.js';

describe.skipIf(!dockerdAvailable)('applications at their domains (Caddy on a real Docker Engine)', () => {
  const dockerd = useDockerd();
  let s: TestServer;
  let api: Api;
  let server: string;
  let project: string;
  let httpPort: number;
  let httpsPort: number;

  const app = async (name: string, domains: string) => {
    const [repo, tag] = BUSYBOX_IMAGE.split(':');
    const serve = `mkdir -p /www && echo ${name} > /www/index.html && exec httpd -f -p 8080 -h /www`;
    const r = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: project,
      server_uuid: server,
      environment_name: 'production',
      name,
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
      ports_exposes: '8080',
      domains,
      custom_docker_run_options: `--entrypoint "sh -c '${serve}'"`,
      instant_deploy: true,
    });
    await deployed(api, r.deployment_uuid, 60_000);
    return r.uuid as string;
  };
  const redeploy = async (uuid: string) => deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);

  beforeAll(async () => {
    [httpPort, httpsPort] = [await freePort(), await freePort()];
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    server = (await api.ok('POST', '/servers', { ip: '127.0.0.1', name: 'dockerd', engine_endpoint: `unix://${dockerd.socket}` })).uuid;
    expect(await api.ok('POST', `/servers/${server}/validate`)).toMatchObject({ is_reachable: true, is_usable: true });
    project = (await api.ok('POST', '/projects', { name: 'domains' })).uuid;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('proxy settings: traefik is refused naming caddy; the configuration is checked like any compose file', async () => {
    const t = await api.req('PATCH', `/servers/${server}/proxy`, { proxy_type: 'traefik' });
    expect(t.status).toBe(422);
    expect(JSON.stringify(t.json.errors.proxy_type)).toContain('caddy');
    expect((await api.req('POST', '/servers', { ip: '127.0.0.1', proxy_type: 'Traefik' })).status).toBe(422);
    const socket = `services:\n  caddy:\n    image: ${CADDY_IMAGE}\n    volumes:\n      - /var/run/docker.sock:/var/run/docker.sock:ro\n`;
    const refused = await api.req('PUT', `/servers/${server}/proxy/configuration`, { configuration: socket });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.json.errors.configuration)).toMatch(/docker\.sock|engine socket/);
    const saved = await api.ok('PUT', `/servers/${server}/proxy/configuration`, {
      configuration: Buffer.from(`services:\n  caddy:\n    image: ${CADDY_IMAGE}\n    ports:\n      - 127.0.0.1:${httpPort}:80\n      - 127.0.0.1:${httpsPort}:443\n`).toString('base64'),
    });
    expect(saved).toMatchObject({ message: 'Proxy configuration saved.', proxy_type: 'none' });
    const p = await api.ok('PATCH', `/servers/${server}/proxy`, { proxy_type: 'caddy', tls_issuer: 'internal', redirect_enabled: true });
    // Nothing needs it yet: no proxy runs until a domain does.
    expect(p).toMatchObject({ proxy_type: 'caddy', tls_issuer: 'internal', status: 'exited' });
  });

  it('an application answers at its domain, a second beside it; a changed domain moves; https with the internal issuer; a deleted one stops answering', async () => {
    const one = await app('app-one', 'http://one.test');
    expect((await answers(httpPort, 'one.test', (a) => a.status === 200)).body).toBe('app-one');
    expect((await api.ok('GET', `/servers/${server}/proxy`)).status).toBe('running');
    expect(JSON.parse(dockerd.docker(['inspect', '--format', '{{json .State.Status}}', 'berth-proxy']))).toBe('running');
    expect((await api.ok('GET', `/applications/${one}`)).proxy_status).toBe('running');

    const two = await app('app-two', 'http://two.test');
    expect((await answers(httpPort, 'two.test', (a) => a.status === 200)).body).toBe('app-two');
    expect((await ask(httpPort, 'one.test')).body).toBe('app-one');
    expect((await ask(httpPort, 'nobody.test')).status).toBe(404);

    // The same domain for another application: 409 naming the one that has it.
    const dup = await api.req('PATCH', `/applications/${two}`, { domains: 'http://one.test' });
    expect(dup.status).toBe(409);
    expect(dup.json.message).toContain("application 'app-one'");

    // A domain change of a running application routes at once: no redeploy.
    await api.ok('PATCH', `/applications/${one}`, { domains: 'http://uno.test' });
    expect((await answers(httpPort, 'uno.test', (a) => a.status === 200)).body).toBe('app-one');
    expect((await ask(httpPort, 'one.test')).status).toBe(404);

    await api.ok('PATCH', `/applications/${two}`, { domains: 'https://secure.test' });
    const secure = await answers(httpsPort, 'secure.test', (a) => a.status === 200, true);
    expect(secure.body).toBe('app-two');
    expect(secure.issuer).toMatch(/Caddy Local Authority/);
    // redirect_enabled: the http:// form goes to https://.
    const plain = await ask(httpPort, 'secure.test');
    expect(plain.status).toBe(308);
    expect(plain.location).toBe('https://secure.test/');

    // A redeploy keeps the route.
    await redeploy(two);
    expect((await answers(httpsPort, 'secure.test', (a) => a.status === 200, true)).body).toBe('app-two');

    await api.ok('DELETE', `/applications/${one}`);
    await answers(httpPort, 'uno.test', (a) => a.status === 404);
    await api.ok('DELETE', `/applications/${two}`);
  }, 240_000);

  it('a service application answers at its url, set at create; a changed url routes at once; get_service shows the proxy', async () => {
    const compose = `services:\n  web:\n    image: ${BUSYBOX_IMAGE}\n    command: ["sh", "-c", "mkdir -p /www && echo svc-web > /www/index.html && exec httpd -f -p 80 -h /www"]\n`;
    const made = await api.ok('POST', '/services', {
      project_uuid: project,
      server_uuid: server,
      environment_name: 'production',
      docker_compose_raw: compose,
      urls: [{ name: 'web', url: 'http://svc.test' }],
      instant_deploy: true,
    });
    expect(made.domains).toEqual(['http://svc.test']);
    await deployed(api, made.deployment_uuid, 60_000);
    expect((await answers(httpPort, 'svc.test', (a) => a.status === 200)).body).toBe('svc-web');
    expect((await api.ok('GET', `/services/${made.uuid}`)).proxy_status).toBe('running');
    await api.ok('PATCH', `/services/${made.uuid}`, { urls: [{ name: 'web', url: 'http://svc2.test' }] });
    expect((await answers(httpPort, 'svc2.test', (a) => a.status === 200)).body).toBe('svc-web');
    expect((await ask(httpPort, 'svc.test')).status).toBe(404);
    await api.ok('DELETE', `/services/${made.uuid}`);
    await answers(httpPort, 'svc2.test', (a) => a.status === 404);
  }, 180_000);

  it('https with ACME: a second Caddy as a private ACME CA on the proxy network issues the domain its certificate (HTTP-01 through the proxy)', async () => {
    // The CA: Caddy's acme_server with its own PKI, its HTTPS on the proxy's network by its name.
    const dir = mkdtempSync(path.join(dockerd.dir, 'acme-'));
    mkdirSync(path.join(dir, 'conf'));
    writeFileSync(
      path.join(dir, 'conf/Caddyfile'),
      '{\n\tadmin off\n\tpki {\n\t\tca local {\n\t\t\tname "berth test ACME CA"\n\t\t\troot_cn "berth test ACME CA root"\n\t\t\tintermediate_cn "berth test ACME CA intermediate"\n\t\t}\n\t}\n}\nacme-ca {\n\ttls internal\n\tacme_server\n}\n',
    );
    // The CA checks the HTTP-01 challenge at http://acme.test/: the name leads to the proxy, as DNS would.
    const proxyIp = JSON.parse(dockerd.docker(['inspect', '--format', '{{json (index .NetworkSettings.Networks "berth-proxy").IPAddress}}', 'berth-proxy']));
    dockerd.docker([
      'run',
      '-d',
      '--name',
      'acme-ca',
      '--network',
      'berth-proxy',
      '--add-host',
      `acme.test:${proxyIp}`,
      '-v',
      `${dir}/conf:/etc/caddy:ro`,
      '-v',
      `${dir}/data:/data`,
      CADDY_IMAGE,
      'caddy',
      'run',
      '--config',
      '/etc/caddy/Caddyfile',
      '--adapter',
      'caddyfile',
    ]);
    try {
      const root = await until(
        'the ACME CA root',
        async () => {
          try {
            return readFileSync(path.join(dir, 'data/caddy/pki/authorities/local/root.crt'), 'utf8');
          } catch {
            return undefined;
          }
        },
        30_000,
        250,
      );
      const bad = await api.req('PATCH', `/servers/${server}/proxy`, { acme_ca_root: 'not a certificate' });
      expect(bad.status).toBe(422);
      const p = await api.ok('PATCH', `/servers/${server}/proxy`, { tls_issuer: 'acme', acme_ca: 'https://acme-ca/acme/local/directory', acme_ca_root: root, acme_email: 'ops@acme.test' });
      expect(p).toMatchObject({ tls_issuer: 'acme', acme_ca: 'https://acme-ca/acme/local/directory', acme_ca_root: root });

      await app('app-acme', 'https://acme.test');
      const got = await answers(httpsPort, 'acme.test', (a) => a.status === 200, true);
      expect(got.body).toBe('app-acme');
      expect(got.issuer).toBe('berth test ACME CA intermediate');
      // The chain checks out against the CA's root for the name, as a client trusting that CA would check it.
      const verified = await new Promise<number>((resolve, reject) =>
        https
          .get({ host: '127.0.0.1', port: httpsPort, path: '/', servername: 'acme.test', headers: { host: 'acme.test' }, ca: root, agent: false, timeout: 5_000 }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          })
          .on('error', reject),
      );
      expect(verified).toBe(200);
    } finally {
      dockerd.docker(['rm', '-f', 'acme-ca']);
    }
  }, 180_000);
});
