/**
 * Applications at their domains, through a real Caddy proxy on a real Docker Engine (its own
 * dockerd, bridge networking; Caddy built from Debian's package): requests go to the proxy's
 * loopback ports with a Host header (or a TLS server name), as a browser's would after DNS.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { PeerCertificate } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, CADDY_IMAGE, dockerdAvailable, useDockerd } from '../helpers/dockerd.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, until } from './support.js';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

interface Answer {
  status: number;
  body: string;
  location?: string;
  issuer?: string;
}

/** One GET to the proxy on 127.0.0.1 as `host` would be asked for (TLS: with it as the server name). */
function ask(port: number, host: string, tls = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const opts = { host: '127.0.0.1', port, path: '/', headers: { host }, timeout: 5_000, ...(tls ? { servername: host, rejectUnauthorized: false, agent: false } : {}) };
    const req = (tls ? https : http).get(opts, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        const cert = tls ? ((res.socket as import('node:tls').TLSSocket).getPeerCertificate?.() as PeerCertificate | undefined) : undefined;
        resolve({ status: res.statusCode ?? 0, body: body.trim(), location: res.headers.location, issuer: String(cert?.issuer?.CN ?? '') });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** Polls until the proxy answers `host` as `want` says (routes are reloaded, not instant). */
const answers = (port: number, host: string, want: (a: Answer) => boolean, tls = false) =>
  until(
    `${host} to answer as expected`,
    async () => {
      const a = await ask(port, host, tls).catch(() => undefined);
      return a && want(a) ? a : undefined;
    },
    30_000,
    250,
  );

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

    await api.ok('PATCH', `/applications/${one}`, { domains: 'http://uno.test' });
    await redeploy(one);
    expect((await answers(httpPort, 'uno.test', (a) => a.status === 200)).body).toBe('app-one');
    expect((await ask(httpPort, 'one.test')).status).toBe(404);

    await api.ok('PATCH', `/applications/${two}`, { domains: 'https://secure.test' });
    await redeploy(two);
    const secure = await answers(httpsPort, 'secure.test', (a) => a.status === 200, true);
    expect(secure.body).toBe('app-two');
    expect(secure.issuer).toMatch(/Caddy Local Authority/);
    // redirect_enabled: the http:// form goes to https://.
    const plain = await ask(httpPort, 'secure.test');
    expect(plain.status).toBe(308);
    expect(plain.location).toBe('https://secure.test/');

    await api.ok('DELETE', `/applications/${one}`);
    await answers(httpPort, 'uno.test', (a) => a.status === 404);
    await api.ok('DELETE', `/applications/${two}`);
  }, 240_000);
});
