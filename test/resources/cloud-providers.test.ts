/**
 * Cloud providers' catalogues and token validation through their own APIs, as Coolify serves them:
 * a stand-in on loopback speaks each provider's protocol (bearer token, its pagination, its error
 * body), since the real APIs cannot be reached here. berth follows every page, leaves out what
 * Coolify leaves out, answers a refused token or an unreachable API with a 502 that names it (never
 * the token), and scopes tokens to the team and the provider.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

const TOKENS = { hetzner: 'hz-good-token', digitalocean: 'do-good-token', vultr: 'vu-good-token' };
const seen: string[] = [];

/** The providers' APIs as far as berth uses them. */
function provider(req: http.IncomingMessage, res: http.ServerResponse): unknown {
  const url = new URL(req.url!, 'http://x');
  seen.push(`${req.method} ${url.pathname}${url.search}`);
  const [, base, ...rest] = url.pathname.split('/');
  const path = `/${rest.join('/')}`;
  const json = (status: number, body: unknown): unknown => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const p = (base === 'hz' && 'hetzner') || (base === 'do' && 'digitalocean') || (base === 'vu' && 'vultr');
  if (!p) return json(404, {});
  if (req.headers.authorization !== `Bearer ${TOKENS[p]}`) {
    return p === 'hetzner' ? json(401, { error: { code: 'unauthorized', message: 'unable to authenticate' } }) : json(401, { id: 'Unauthorized', message: 'Unable to authenticate you' });
  }
  const page = Number(url.searchParams.get('page') ?? 1);
  if (p === 'hetzner') {
    if (path === '/servers') return json(200, { servers: [], meta: { pagination: { page: 1, next_page: null } } });
    if (path === '/locations') return json(200, { locations: [{ id: page, name: page === 1 ? 'fsn1' : 'nbg1' }], meta: { pagination: { page, next_page: page === 1 ? 2 : null } } });
    if (path === '/server_types')
      return json(200, {
        server_types: [
          { id: 1, name: 'cx22', deprecated: false },
          { id: 2, name: 'cx11', deprecated: true },
        ],
        meta: { pagination: { next_page: null } },
      });
    if (path === '/images') return json(200, { images: [{ id: 7, name: `debian-12 (${url.searchParams.get('type')})` }], meta: { pagination: { next_page: null } } });
    for (const k of ['ssh_keys', 'firewalls', 'networks']) if (path === `/${k}`) return json(200, { [k]: [{ id: 1, name: `${k}-1` }], meta: { pagination: { next_page: null } } });
  }
  if (p === 'digitalocean') {
    if (path === '/account') return json(200, { account: { status: 'active' } });
    if (path === '/regions')
      return json(200, {
        regions:
          page === 1
            ? [{ slug: 'fra1', available: true }]
            : [
                { slug: 'old1', available: false },
                { slug: 'ams3', available: true },
              ],
        links: page === 1 ? { pages: { next: 'https://api.digitalocean.com/v2/regions?page=2' } } : {},
      });
    if (path === '/sizes') return json(200, { sizes: [{ slug: 's-1vcpu-1gb', available: true }], links: {} });
    if (path === '/images')
      return json(200, {
        images: [
          { slug: 'debian-12-x64', public: true, type: url.searchParams.get('type') },
          { slug: 'mine', public: false },
        ],
        links: {},
      });
    if (path === '/account/keys') return json(200, { ssh_keys: [{ id: 1, name: 'laptop' }], links: {} });
  }
  if (p === 'vultr') {
    if (path === '/account') return json(200, { account: { name: 'me' } });
    const cursor = url.searchParams.get('cursor');
    if (path === '/plans') return json(200, { plans: [{ id: cursor ? 'vc2-2c-4gb' : 'vc2-1c-1gb' }], meta: { total: 2, links: { next: cursor ? '' : 'bmV4dA==', prev: '' } } });
    for (const k of ['regions', 'os', 'ssh-keys']) if (path === `/${k}`) return json(200, { [k === 'ssh-keys' ? 'ssh_keys' : k]: [{ id: `${k}-1` }], meta: { links: { next: '' } } });
  }
  return json(404, { error: { code: 'not_found', message: 'no such path' } });
}

let s: TestServer;
let stand: http.Server;
let root: string;
const uuids = {} as Record<keyof typeof TOKENS | 'badHetzner', string>;
const api = (method: string, path: string, token = root, body?: unknown) => call(s.url, method, `/api/v1${path}`, { token, body });

beforeAll(async () => {
  stand = http.createServer(provider);
  await new Promise<void>((r) => stand.listen(0, '127.0.0.1', () => r()));
  const at = `http://127.0.0.1:${(stand.address() as { port: number }).port}`;
  s = await startTestServer({ apiRateLimit: 0, outboundAllowedTargets: '127.0.0.1', cloudApiUrls: { hetzner: `${at}/hz`, digitalocean: `${at}/do`, vultr: `${at}/vu` } });
  root = s.rootToken;
  for (const p of ['hetzner', 'digitalocean', 'vultr'] as const) uuids[p] = (await api('POST', '/cloud-tokens', root, { provider: p, token: TOKENS[p], name: p })).json.uuid;
  uuids.badHetzner = (await api('POST', '/cloud-tokens', root, { provider: 'hetzner', token: 'hz-revoked', name: 'old' })).json.uuid;
});
afterAll(async () => {
  await s?.stop();
  await new Promise((r) => stand?.close(r));
});

describe('validate_cloud_token asks the provider', () => {
  it('valid for a token the provider accepts, invalid (200) for one it refuses, as Coolify answers', async () => {
    for (const p of ['hetzner', 'digitalocean', 'vultr'] as const) {
      expect((await api('POST', `/cloud-tokens/${uuids[p]}/validate`)).json, p).toEqual({ valid: true, message: 'Token is valid.' });
    }
    expect(seen).toEqual(expect.arrayContaining(['GET /hz/servers?per_page=1', 'GET /do/account', 'GET /vu/account']));
    const bad = await api('POST', `/cloud-tokens/${uuids.badHetzner}/validate`);
    expect(bad.status).toBe(200);
    expect(bad.json).toEqual({ valid: false, message: 'Invalid hetzner token. Please check your API token.' });
  });
});

describe("the providers' catalogues", () => {
  it('every page, filtered as Coolify filters them', async () => {
    const get = async (path: string, uuid: string) => {
      const r = await api('GET', `${path}?cloud_provider_token_uuid=${uuid}`);
      expect(r.status, `${path} ${r.text}`).toBe(200);
      return r.json as Array<Record<string, unknown>>;
    };
    expect((await get('/hetzner/locations', uuids.hetzner)).map((l) => l.name)).toEqual(['fsn1', 'nbg1']);
    expect((await get('/hetzner/server-types', uuids.hetzner)).map((t) => t.name)).toEqual(['cx22']);
    expect((await get('/hetzner/images', uuids.hetzner)).map((i) => i.name)).toEqual(['debian-12 (system)']);
    for (const k of ['ssh-keys', 'firewalls', 'networks']) expect(await get(`/hetzner/${k}`, uuids.hetzner)).toHaveLength(1);
    expect((await get('/digitalocean/regions', uuids.digitalocean)).map((r) => r.slug)).toEqual(['fra1', 'ams3']);
    expect((await get('/digitalocean/sizes', uuids.digitalocean)).map((r) => r.slug)).toEqual(['s-1vcpu-1gb']);
    expect(await get('/digitalocean/images', uuids.digitalocean)).toEqual([{ slug: 'debian-12-x64', public: true, type: 'distribution' }]);
    expect((await get('/digitalocean/ssh-keys', uuids.digitalocean)).map((k) => k.name)).toEqual(['laptop']);
    expect((await get('/vultr/plans', uuids.vultr)).map((p) => p.id)).toEqual(['vc2-1c-1gb', 'vc2-2c-4gb']);
    expect(seen).toContain('GET /vu/plans?per_page=100&cursor=bmV4dA%3D%3D');
    for (const k of ['regions', 'os', 'ssh-keys']) expect(await get(`/vultr/${k}`, uuids.vultr)).toHaveLength(1);
    // Coolify's deprecated name of the field works too.
    expect(await api('GET', `/hetzner/networks?cloud_provider_token_id=${uuids.hetzner}`)).toMatchObject({ status: 200 });
  });

  it('a refused token and an unreachable API are 502s naming the provider, never the token', async () => {
    const r = await api('GET', `/hetzner/locations?cloud_provider_token_uuid=${uuids.badHetzner}`);
    expect(r.status).toBe(502);
    expect(r.json.message).toBe("Hetzner's API answered 401 (the token is not accepted: check it with validate_cloud_token): unable to authenticate");
    const down = await startTestServer({ apiRateLimit: 0, cloudApiUrls: { hetzner: 'http://127.0.0.1:9/v1', digitalocean: 'x', vultr: 'x' } });
    try {
      const t = (await call(down.url, 'POST', '/api/v1/cloud-tokens', { token: down.rootToken, body: { provider: 'hetzner', token: 'hz-secret-never-shown', name: 'x' } })).json.uuid;
      for (const path of [`/hetzner/locations?cloud_provider_token_uuid=${t}`, `/cloud-tokens/${t}/validate`]) {
        const d = await call(down.url, path.includes('validate') ? 'POST' : 'GET', `/api/v1${path}`, { token: down.rootToken });
        expect(d.status, d.text).toBe(502);
        expect(d.json.message).toMatch(/^Hetzner's API \(http:\/\/127\.0\.0\.1:9\) could not be reached: refused .*BERTH_OUTBOUND_ALLOWED_TARGETS/);
        expect(d.text).not.toContain('hz-secret-never-shown');
      }
    } finally {
      await down.stop();
    }
  });

  it("another provider's token, another team's and a missing one are the same 404; no token is a 422; read is enough", async () => {
    const notFound = '{"message":"Resource not found."}';
    expect((await api('GET', `/hetzner/locations?cloud_provider_token_uuid=${uuids.vultr}`)).text).toBe(notFound);
    const other = await s.team('Cloud neighbours');
    expect((await api('GET', `/hetzner/locations?cloud_provider_token_uuid=${uuids.hetzner}`, other.rootToken)).text).toBe(notFound);
    expect((await api('POST', `/cloud-tokens/${uuids.hetzner}/validate`, other.rootToken)).text).toBe(notFound);
    expect((await api('GET', '/hetzner/locations?cloud_provider_token_uuid=nosuchtoken')).text).toBe(notFound);
    const none = await api('GET', '/vultr/os');
    expect(none.status).toBe(422);
    expect(Object.keys(none.json.errors)).toEqual(['cloud_provider_token_uuid']);
    const reader = (await s.token({ permissions: ['read'] })).token;
    expect((await api('GET', `/vultr/os?cloud_provider_token_uuid=${uuids.vultr}`, reader)).status).toBe(200);
    const writer = (await s.token({ permissions: ['write'] })).token;
    expect((await api('GET', `/vultr/os?cloud_provider_token_uuid=${uuids.vultr}`, writer)).status).toBe(403);
  });
});
