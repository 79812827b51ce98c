import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { TEST_KEY } from '../helpers/world.js';

/**
 * What Fastify itself would answer (a path it cannot read, a body it will not take), which
 * query fields a request's input takes, and the GET Coolify answers on its action routes: every
 * answer in the contract's shape and order.
 */
let s: TestServer;
let app: string;
let reader: string;
beforeAll(async () => {
  s = await startTestServer();
  const ok = async (method: string, path: string, body?: unknown) => {
    const r = await call(s.url, method, path, { token: s.rootToken, body });
    if (r.status >= 300) throw new Error(`${method} ${path} → ${r.status} ${r.text}`);
    return r.json;
  };
  const key = (await ok('POST', '/api/v1/security/keys', { name: 'k', private_key: TEST_KEY })).uuid;
  const server = (await ok('POST', '/api/v1/servers', { name: 'one', ip: '10.0.0.1', private_key_uuid: key })).uuid;
  const project = (await ok('POST', '/api/v1/projects', { name: 'p' })).uuid;
  app = (
    await ok('POST', '/api/v1/applications/dockerimage', {
      project_uuid: project,
      server_uuid: server,
      environment_name: 'production',
      docker_registry_image_name: 'nginx',
      ports_exposes: '80',
    })
  ).uuid;
  reader = (await s.token({ permissions: ['read'] })).token;
}, 60_000);
afterAll(() => s.stop());

const invalid = (errors: Record<string, string[]>) => ({ message: 'Validation error.', errors });

/** One raw request, for what an HTTP client library would not send. */
function raw(request: string): Promise<string> {
  const { hostname, port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(request));
    let out = '';
    socket.on('data', (d) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

describe("the router's refusals are the contract's, after authentication", () => {
  const long = 'a'.repeat(150);
  const paths = [
    [`/api/v1/applications/${long}`, { uuid: ['Too long: at most 100 characters.'] }],
    ['/api/v1/applications/%E0%A4%A', { uuid: ['Not valid percent-encoding.'] }],
    [`/api/v1/applications/${long}/envs`, { uuid: ['Too long: at most 100 characters.'] }],
  ] as const;

  it('a path segment too long or badly escaped: 401 without a token, 422 naming the parameter with one, never the input echoed', async () => {
    for (const [path, errors] of paths) {
      const anon = await call(s.url, 'GET', path);
      expect(anon.status, path).toBe(401);
      expect(anon.json).toEqual({ message: 'Unauthenticated.' });
      const r = await call(s.url, 'GET', path, { token: s.rootToken });
      expect(r.status, path).toBe(422);
      expect(r.json).toEqual(invalid(errors as unknown as Record<string, string[]>));
      expect(r.text).not.toContain('aaaa');
    }
  });

  it('permission still comes before the path: a reader deleting by a bad path gets 403', async () => {
    const r = await call(s.url, 'DELETE', `/api/v1/applications/${long}`, { token: reader });
    expect(r.status).toBe(403);
    expect(r.json.missing_permissions).toEqual(['write']);
  });

  it('an unreadable segment where no route has a parameter is the usual 404', async () => {
    const r = await call(s.url, 'GET', `/api/v1/${long}`, { token: s.rootToken });
    expect(r.status).toBe(404);
    expect(r.text).toBe('{"message":"Not found."}');
  });

  it('a body too large: 401 first, then a 422 on body', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) });
    expect((await call(s.url, 'POST', '/api/v1/projects', { body: big })).status).toBe(401);
    const r = await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: big });
    expect(r.status).toBe(422);
    expect(r.json).toEqual(invalid({ body: ['The body is too large.'] }));
  });

  it('a request Node cannot parse (a bad header, a body cut short of its Content-Length): the contract\u2019s {"message"} shape', async () => {
    const requests = [
      'GET /api/v1/teams HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      'POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"name":"x"}',
    ];
    for (const request of requests) {
      const out = await raw(request);
      expect(out).toMatch(/^HTTP\/1\.1 400/);
      expect(out.slice(out.indexOf('\r\n\r\n') + 4)).toBe('{"message":"Bad request."}');
    }
  });
});

describe('bodies that are not a JSON object (decisions: a non-object body is a 422 on body)', () => {
  it('null is not "no fields"', async () => {
    const r = await call(s.url, 'PATCH', `/api/v1/applications/${app}`, { token: s.rootToken, body: 'null' });
    expect(r.status).toBe(422);
    expect(r.json).toEqual(invalid({ body: ['Expected a JSON object.'] }));
  });

  it('JSON sent as text/plain is refused like every other non-JSON type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const r = await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: '{"name":"plain"}', headers: { 'content-type': type } });
      expect(r.status, type).toBe(422);
      expect(r.json).toEqual(invalid({ body: ['Send the body as application/json.'] }));
    }
  });
});

describe("a write's query string carries only the fields its declaration names", () => {
  it('a body field in the query of a POST is a 422, and nothing is created', async () => {
    const r = await call(s.url, 'POST', '/api/v1/projects?name=fromquery', { token: s.rootToken, body: {} });
    expect(r.status).toBe(422);
    expect(r.json).toEqual(invalid({ name: ['Send this field in the JSON body, not the query string.'] }));
    const names = (await call(s.url, 'GET', '/api/v1/projects', { token: s.rootToken })).json.map((p: { name: string }) => p.name);
    expect(names).not.toContain('fromquery');
    const env = await call(s.url, 'POST', `/api/v1/applications/${app}/envs?key=DBPASS&value=hunter2secret&other=1`, { token: s.rootToken, body: {} });
    expect(env.status).toBe(422);
    expect(Object.keys(env.json.errors).sort()).toEqual(['key', 'other', 'value']);
    expect(env.json.errors.other).toEqual(['This field is not allowed.']);
  });

  it("Coolify's query fields on a write still work (POST /deploy?uuid=), but not given twice", async () => {
    const r = await call(s.url, 'POST', `/api/v1/deploy?uuid=${app}&force=true`, { token: s.rootToken });
    expect(r.status).toBe(200);
    expect(r.json.deployments[0].resource_uuid).toBe(app);
    const both = await call(s.url, 'POST', `/api/v1/deploy?uuid=${app}`, { token: s.rootToken, body: { uuid: app } });
    expect(both.status).toBe(422);
    expect(both.json).toEqual(invalid({ uuid: ['Give this field in the query string or the body, not both.'] }));
  });

  it('GET and DELETE still take their fields from the query', async () => {
    const r = await call(s.url, 'GET', '/api/v1/projects?page=1&per_page=1', { token: s.rootToken });
    expect(r.status).toBe(200);
    expect(r.headers['x-per-page']).toBe('1');
  });
});

describe("Coolify 4.3.11's 405 on a GET of its POST-only routes", () => {
  const MOVED = { message: 'This endpoint has changed to a POST request.' };
  const deployments = async () => (await s.db.selectFrom('deployments').select('id').execute()).length;

  it('GET /deploy?uuid=, start, stop, restart and server validate answer 405 with Allow: POST, and nothing runs', async () => {
    const servers = (await call(s.url, 'GET', '/api/v1/servers', { token: s.rootToken })).json;
    const before = await deployments();
    for (const path of [
      `/api/v1/deploy?uuid=${app}`,
      `/api/v1/applications/${app}/start`,
      `/api/v1/applications/${app}/stop`,
      `/api/v1/applications/${app}/restart`,
      '/api/v1/databases/zzzzzzzz/start',
      '/api/v1/services/zzzzzzzz/restart?latest=true',
      `/api/v1/servers/${servers[0].uuid}/validate`,
      '/api/v1/enable',
      '/api/v1/disable',
    ]) {
      const r = await call(s.url, 'GET', path, { token: s.rootToken });
      expect(r.status, path).toBe(405);
      expect(r.json, path).toEqual(MOVED);
      expect(r.headers.allow, path).toBe('POST');
    }
    expect(await deployments()).toBe(before);
    // GET /disable did not turn the API off.
    expect((await call(s.url, 'GET', '/api/v1/version', { token: s.rootToken })).status).toBe(200);
    const validated = await s.db.selectFrom('servers').select('validated_at').where('uuid', '=', servers[0].uuid).executeTakeFirst();
    expect(validated?.validated_at ?? null).toBeNull();
  });

  it('the token and permission checks come first, as on Coolify (its GET routes carry them): a reader gets 403, no token 401', async () => {
    const r = await call(s.url, 'GET', `/api/v1/applications/${app}/stop`, { token: reader });
    expect(r.status).toBe(403);
    expect(r.json.missing_permissions).toEqual(['deploy']);
    expect((await call(s.url, 'GET', `/api/v1/deploy?uuid=${app}`)).status).toBe(401);
  });

  it('the POST still runs', async () => {
    const r = await call(s.url, 'POST', `/api/v1/applications/${app}/restart`, { token: s.rootToken });
    expect(r.status).toBe(200);
    expect(r.json.deployment_uuid).toEqual(expect.any(String));
  });

  it('HEAD on a read takes its query as the GET does (an uptime check with ?lines= is not a 422)', async () => {
    const get = await call(s.url, 'GET', `/api/v1/applications/${app}/logs?lines=5`, { token: s.rootToken });
    const head = await call(s.url, 'HEAD', `/api/v1/applications/${app}/logs?lines=5`, { token: s.rootToken });
    expect(get.status, get.text).toBe(200);
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('a write whose query names a path parameter says it is taken from the path', async () => {
    const r = await call(s.url, 'POST', `/api/v1/applications/${app}/start?uuid=${app}`, { token: s.rootToken });
    expect(r.status).toBe(422);
    expect(r.json).toEqual({ message: 'Validation error.', errors: { uuid: ['This field is taken from the path.'] } });
  });

  it('no HEAD on an action: the plain 405, Allow: POST; the OpenAPI document lists only the POST', async () => {
    const r = await call(s.url, 'HEAD', `/api/v1/deploy?uuid=${app}`, { token: s.rootToken });
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe('POST');
    const doc = (await call(s.url, 'GET', '/api/v1/openapi.json')).json;
    expect(Object.keys(doc.paths['/api/v1/deploy'])).toEqual(['post']);
    expect(doc.paths['/api/v1/deploy'].post.parameters.map((p: { name: string }) => p.name)).toEqual(['uuid', 'tag', 'force', 'pr']);
    expect(Object.keys(doc.paths['/api/v1/applications/{uuid}/start'])).toEqual(['post']);
  });
});
