import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planResource } from '../../src/engine/plan.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { errorBody, httpClient } from '../helpers/mcp.js';
import { buildWorld, type World } from '../helpers/world.js';
import { placeOf, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const create = (ctx: Ctx, type: string, extra: Record<string, unknown> = {}) => ctx.api('POST', '/services', ctx.write, { ...placeOf(ctx.w), type, ...extra });
const envsOf = async (ctx: Ctx, uuid: string, token: string): Promise<Record<string, string | undefined>> =>
  Object.fromEntries((await ctx.api('GET', `/services/${uuid}/envs`, token)).json.map((e: { key: string; value?: string }) => [e.key, e.value]));
/** What the service's containers get from a deploy: the plan berth makes of its records. */
async function planned(s: TestServer, uuid: string) {
  const r = await s.db.selectFrom('resources').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow();
  const plan = await planResource(s.db, r.id);
  return Object.fromEntries(plan.containers.map((k) => [k.name.slice(uuid.length + 1), Object.fromEntries((k.spec.env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))]));
}

describe('one-click services over REST', () => {
  it('GET /services/templates lists name, description and tags (a bare array, X-Total-Count), search narrows it; not a service uuid', async () => {
    const r = await c.api('GET', '/services/templates', c.read);
    expect(r.status, r.text).toBe(200);
    expect(Number(r.headers['x-total-count'])).toBeGreaterThanOrEqual(30);
    expect(r.json.find((t: { name: string }) => t.name === 'uptime-kuma')).toEqual({
      name: 'uptime-kuma',
      description: expect.stringContaining('monitoring'),
      tags: expect.arrayContaining(['monitoring']),
      documentation: expect.stringMatching(/^https:/),
      source: 'builtin',
    });
    const found = await c.api('GET', '/services/templates?search=POSTGRESQL', c.read);
    expect(found.json.length).toBeGreaterThan(3);
    for (const t of found.json) expect(`${t.name} ${t.description} ${t.tags.join(' ')}`.toLowerCase()).toContain('postgresql');
    expect((await c.api('GET', '/services/templates', '')).status).toBe(401);
  });

  it('POST /services {type} → 201 {uuid, domains}; service_type names the template; secrets are generated, distinct per service, redacted without read:sensitive', async () => {
    const a = await create(c, 'n8n-with-postgresql', { name: 'flows', instant_deploy: false });
    expect(a.status, a.text).toBe(201);
    expect(a.json).toEqual({ uuid: expect.stringMatching(/^[a-z0-9]{24}$/), domains: [] });
    const b = await create(c, 'n8n-with-postgresql');
    expect(b.status, b.text).toBe(201);
    const got = (await c.api('GET', `/services/${a.json.uuid}`, c.sensitive)).json;
    expect(got).toMatchObject({ name: 'flows', service_type: 'n8n-with-postgresql', containers: [{ name: 'postgresql' }, { name: 'n8n' }] });
    expect(got.docker_compose_raw).toContain('$SERVICE_PASSWORD_POSTGRES');
    expect((await c.api('GET', `/services/${b.json.uuid}`, c.read)).json.name).toMatch(/^n8n-with-postgresql-/);

    const envA = await envsOf(c, a.json.uuid, c.sensitive);
    const envB = await envsOf(c, b.json.uuid, c.sensitive);
    expect(Object.keys(envA).sort()).toEqual([
      'SERVICE_FQDN_N8N',
      'SERVICE_FQDN_N8N_5678',
      'SERVICE_PASSWORD_64_N8N',
      'SERVICE_PASSWORD_POSTGRES',
      'SERVICE_URL_N8N',
      'SERVICE_URL_N8N_5678',
      'SERVICE_USER_POSTGRES',
    ]);
    expect(envA.SERVICE_PASSWORD_POSTGRES).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(envA.SERVICE_PASSWORD_64_N8N).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(envA.SERVICE_URL_N8N_5678).toBe(`http://${a.json.uuid}-n8n:5678`);
    for (const k of ['SERVICE_PASSWORD_POSTGRES', 'SERVICE_USER_POSTGRES', 'SERVICE_PASSWORD_64_N8N']) expect(envA[k], k).not.toBe(envB[k]);
    // Without read:sensitive the values are absent, as every variable's are.
    const redacted = (await c.api('GET', `/services/${a.json.uuid}/envs`, c.read)).json;
    expect(redacted.length).toBe(7);
    for (const e of redacted) expect(e).not.toHaveProperty('value');
    expect(JSON.stringify(redacted)).not.toContain(envA.SERVICE_PASSWORD_POSTGRES);
  });

  it("the containers see the service's variables through the compose file, and a changed variable reaches them at the next deploy", async () => {
    const r = await create(c, 'n8n-with-postgresql');
    const env = await envsOf(c, r.json.uuid, c.sensitive);
    let seen = await planned(c.s, r.json.uuid);
    expect(seen.postgresql).toMatchObject({ POSTGRES_USER: env.SERVICE_USER_POSTGRES, POSTGRES_PASSWORD: env.SERVICE_PASSWORD_POSTGRES, POSTGRES_DB: 'n8n' });
    expect(seen.n8n).toMatchObject({
      DB_POSTGRESDB_USER: env.SERVICE_USER_POSTGRES,
      DB_POSTGRESDB_PASSWORD: env.SERVICE_PASSWORD_POSTGRES,
      N8N_ENCRYPTION_KEY: env.SERVICE_PASSWORD_64_N8N,
      WEBHOOK_URL: `http://${r.json.uuid}-n8n`,
      N8N_HOST: `${r.json.uuid}-n8n`,
    });
    const patched = await c.api('PATCH', `/services/${r.json.uuid}/envs`, c.write, { key: 'SERVICE_PASSWORD_POSTGRES', value: 'rotated-by-hand' });
    expect(patched.status, patched.text).toBe(201);
    seen = await planned(c.s, r.json.uuid);
    expect(seen.postgresql!.POSTGRES_PASSWORD).toBe('rotated-by-hand');
    expect(seen.n8n!.DB_POSTGRESDB_PASSWORD).toBe('rotated-by-hand');
  });

  it("a template service's new compose file gets values for the magic variables it adds; the ones it had are kept", async () => {
    const r = await create(c, 'memos');
    const before = await envsOf(c, r.json.uuid, c.sensitive);
    const compose = `services:\n  memos:\n    image: neosmemo/memos:stable\n    environment:\n      - SERVICE_URL_MEMOS_5230\n      - TOKEN=$SERVICE_PASSWORD_TOKEN\n    volumes:\n      - memos-data:/var/opt/memos\n`;
    const patched = await c.api('PATCH', `/services/${r.json.uuid}`, c.write, { docker_compose_raw: compose });
    expect(patched.status, patched.text).toBe(200);
    const after = await envsOf(c, r.json.uuid, c.sensitive);
    expect(after).toMatchObject(before);
    expect(after.SERVICE_PASSWORD_TOKEN).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await planned(c.s, r.json.uuid)).memos!.TOKEN).toBe(after.SERVICE_PASSWORD_TOKEN);
  });

  it("a clone keeps the template's variables, but its URLs name the clone's containers, not the source's", async () => {
    const r = await create(c, 'grafana');
    const env = await envsOf(c, r.json.uuid, c.sensitive);
    const cloned = await c.api('POST', `/services/${r.json.uuid}/clone`, c.write, { destination_uuid: c.w.destinationUuid });
    expect(cloned.status, cloned.text).toBe(201);
    const copy = cloned.json.uuid as string;
    const copied = await envsOf(c, copy, c.sensitive);
    expect(copied).toMatchObject({
      SERVICE_PASSWORD_GRAFANA: env.SERVICE_PASSWORD_GRAFANA,
      SERVICE_URL_GRAFANA: `http://${copy}-grafana`,
      SERVICE_URL_GRAFANA_3000: `http://${copy}-grafana:3000`,
      SERVICE_FQDN_GRAFANA: `${copy}-grafana`,
    });
    expect((await planned(c.s, copy)).grafana).toMatchObject({ GF_SERVER_ROOT_URL: `http://${copy}-grafana`, GF_SECURITY_ADMIN_PASSWORD: env.SERVICE_PASSWORD_GRAFANA });
  });

  it('a service from a compose file keeps its `$` literal, as before (no interpolation)', async () => {
    const yaml = 'services:\n  app:\n    image: nginx:1\n    environment:\n      PASS: "a$$b${X}"\n';
    const r = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml });
    expect(r.status, r.text).toBe(201);
    expect((await planned(c.s, r.json.uuid)).app!.PASS).toBe('a$$b${X}');
    expect((await c.api('GET', `/services/${r.json.uuid}`, c.read)).json.service_type).toBeNull();
  });

  it('an unknown type is a 422 that names the list tool and route; type with docker_compose_raw, or neither, is a 422; nothing is created', async () => {
    const before = (
      await c.s.db
        .selectFrom('resources')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n;
    const r = await create(c, 'no-such-template');
    expect(r.status).toBe(422);
    expect(r.json).toEqual({
      message: 'Validation error.',
      errors: { type: ['Unknown service type "no-such-template". list_service_templates (GET /api/v1/services/templates) lists the types.'] },
    });
    const both = await create(c, 'n8n', { docker_compose_raw: 'services:\n  a:\n    image: nginx:1\n' });
    expect(both.status).toBe(422);
    expect(both.json.errors.docker_compose_raw).toEqual(['Give either type or docker_compose_raw, not both.']);
    const neither = await c.api('POST', '/services', c.write, placeOf(c.w));
    expect(neither.status).toBe(422);
    expect(neither.json.errors.type[0]).toContain('list_service_templates');
    expect((await create(c, 'bad type!')).status).toBe(422);
    const after = (
      await c.s.db
        .selectFrom('resources')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n;
    expect(Number(after)).toBe(Number(before));
  });
});

describe('one-click services over MCP', () => {
  it('list_service_templates pages the catalog; create_service {type} stores generated secrets; an unknown type names the list tool', async () => {
    const mcp = await httpClient('v2-modern', c.s.url, c.root);
    try {
      const list = await mcp.callTool('list_service_templates', { search: 'vaultwarden' });
      expect(list.isError).toBeFalsy();
      expect(list.structuredContent).toMatchObject({ total: 1, items: [{ name: 'vaultwarden', source: 'builtin' }] });
      const made = await mcp.callTool('create_service', { ...placeOf(c.w), type: 'vaultwarden' });
      expect(made.isError, JSON.stringify(made)).toBeFalsy();
      const uuid = made.structuredContent!.uuid as string;
      const env = await envsOf(c, uuid, c.sensitive);
      expect(env.SERVICE_PASSWORD_64_ADMIN).toMatch(/^[A-Za-z0-9]{64}$/);
      expect((await planned(c.s, uuid)).vaultwarden).toMatchObject({ ADMIN_TOKEN: env.SERVICE_PASSWORD_64_ADMIN, DOMAIN: `http://${uuid}-vaultwarden` });
      const unknown = await mcp.callTool('create_service', { ...placeOf(c.w), type: 'nope' });
      expect(errorBody(unknown)).toMatchObject({ message: 'Validation error.', errors: { type: [expect.stringContaining('list_service_templates')] } });
    } finally {
      await mcp.close();
    }
  });
});

describe("BERTH_SERVICE_TEMPLATES: an operator's catalog in Coolify's format extends and overrides berth's", () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const catalog = JSON.stringify({
    'uptime-kuma': {
      compose: b64('services:\n  kuma:\n    image: registry.example.test/kuma:9\n    environment:\n      - ADMIN=$SERVICE_PASSWORD_KUMA\n'),
      slogan: "The operator's own kuma.",
      tags: ['ours'],
    },
    'house-app': {
      compose: b64('services:\n  app:\n    image: registry.example.test/app:1\n    environment:\n      - TOKEN=$SERVICE_BASE64_64_TOKEN\n'),
      slogan: 'An app of the house.',
      tags: ['house'],
      logo: 'x.svg',
      minversion: '0.0.0',
    },
  });

  async function expectOperatorCatalog(source: string) {
    const s = await startTestServer({ apiRateLimit: 0, serviceTemplates: source });
    try {
      const w: World = await buildWorld(s);
      const list = await call(s.url, 'GET', '/api/v1/services/templates?search=house', { token: s.rootToken });
      expect(list.json).toEqual([{ name: 'house-app', description: 'An app of the house.', tags: ['house'], documentation: null, source: 'operator' }]);
      const all = await call(s.url, 'GET', '/api/v1/services/templates', { token: s.rootToken });
      expect(all.json.find((t: { name: string }) => t.name === 'uptime-kuma')).toMatchObject({ description: "The operator's own kuma.", source: 'operator' });
      expect(all.json.find((t: { name: string }) => t.name === 'n8n')).toMatchObject({ source: 'builtin' });
      const made = await call(s.url, 'POST', '/api/v1/services', { token: s.rootToken, body: { ...placeOf(w), type: 'house-app' } });
      expect(made.status, made.text).toBe(201);
      const env = await call(s.url, 'GET', `/api/v1/services/${made.json.uuid}/envs`, { token: s.rootToken });
      expect(env.json.map((e: { key: string; value: string }) => [e.key, e.value.length])).toEqual([['SERVICE_BASE64_64_TOKEN', 64]]);
      const kuma = await call(s.url, 'POST', '/api/v1/services', { token: s.rootToken, body: { ...placeOf(w), type: 'uptime-kuma' } });
      expect((await call(s.url, 'GET', `/api/v1/services/${kuma.json.uuid}`, { token: s.rootToken })).json.containers).toEqual([{ name: 'kuma', image: 'registry.example.test/kuma:9', volumes: [] }]);
    } finally {
      await s.stop();
    }
  }

  it('from a file', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'berth-templates-')), 'service-templates.json');
    writeFileSync(file, catalog);
    await expectOperatorCatalog(file);
  });

  it('from a URL (a loopback server, fetched once on first use)', async () => {
    let fetched = 0;
    const server: Server = createServer((req, res) => {
      fetched++;
      res.writeHead(req.url === '/service-templates.json' ? 200 : 404, { 'content-type': 'application/json' }).end(catalog);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/service-templates.json`;
      await expectOperatorCatalog(url);
      expect(fetched).toBe(1);
    } finally {
      server.close();
    }
  });

  it('a source that cannot be read leaves the built-in catalog serving', async () => {
    const s = await startTestServer({ apiRateLimit: 0, serviceTemplates: path.join(os.tmpdir(), 'berth-no-such-catalog.json') });
    try {
      const all = await call(s.url, 'GET', '/api/v1/services/templates', { token: s.rootToken });
      expect(all.status).toBe(200);
      expect(all.json.every((t: { source: string }) => t.source === 'builtin')).toBe(true);
    } finally {
      await s.stop();
    }
  });
});
