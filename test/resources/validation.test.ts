import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../src/core/operations/index.js';
import { pathParams } from '../../src/core/operation.js';
import { call } from '../helpers/server.js';
import { dump, expectValidation, fillPath, NOT_FOUND, placeOf, setup, type Ctx } from './support.js';

/**
 * Sweeps over the operation table: every resource operation refuses unknown and forbidden
 * fields (one error per field) before acting, and nothing is written.
 */
let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const RESOURCE_TOOLSETS = new Set(['servers', 'applications', 'databases', 'services', 'deployments']);
const resourceOps = operations.filter((o) => RESOURCE_TOOLSETS.has(o.toolset));
const writes = resourceOps.filter((o) => o.http.method !== 'GET');
const reads = resourceOps.filter((o) => o.http.method === 'GET');

describe('unknown and forbidden fields, for every resource operation', () => {
  it.each(writes.map((o) => [o.http.method, o.http.path, o] as const))('%s %s', async (method, path, op) => {
    const url = fillPath(path, c.w, c.s.rootTeamId);
    const before = await dump(c.s);
    // Fields an operation declares (Coolify names a storage by body id, a service volume's container by resource_uuid) are not foreign.
    const body = Object.fromEntries(Object.entries({ bogus_field: 1, team_id: 1, id: 1, resource_id: 1 }).filter(([k]) => !(k in op.input.shape)));
    const r = await c.api(method, url, c.root, body);
    expectValidation(r, Object.keys(body), false);
    for (const f of Object.keys(body)) expect(r.json.errors[f]).toEqual(['This field is not allowed.']);
    // Path parameters may not be set (or overridden) in a body.
    // A body name the operation declares for itself (Coolify's storage `uuid`, op.http.bodyNames) is its own field, not a clash.
    for (const p of pathParams(op.http.path).filter((p) => !op.http.bodyNames?.[p])) {
      const clash = await c.api(method, url, c.root, { [p]: 'abc' });
      expectValidation(clash, [p]);
    }
    expect(await dump(c.s)).toEqual(before);
  });

  it.each(reads.map((o) => [o.http.path] as const))('GET %s refuses unknown query fields', async (path) => {
    const url = fillPath(path, c.w, c.s.rootTeamId);
    const r = await c.api('GET', `${url}?bogus_field=1`, c.root);
    expectValidation(r, ['bogus_field']);
  });
});

describe('malformed bodies', () => {
  it('invalid JSON, a non-object, or a non-JSON content type → 422 on body; nothing stored', async () => {
    const before = await dump(c.s);
    for (const body of ['{"name":', '"a string"', '[]', '42', 'null']) {
      const r = await c.api('POST', '/projects', c.write, body);
      expect(r.status, `${body}: ${r.text}`).toBe(422);
      if (body !== 'null') expectValidation(r, ['body']);
    }
    const form = await call(c.s.url, 'POST', '/api/v1/projects', { token: c.write, body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectValidation(form, ['body']);
    expect(await dump(c.s)).toEqual(before);
  });
});

describe('references resolve inside the caller’s team', () => {
  it('another team’s project, server, destination or environment in a create body → 404, nothing created', async () => {
    const other = await c.s.team('Reference Owners');
    const theirServer = (await c.api('POST', '/servers', other.rootToken, { ip: '10.80.0.1' })).json.uuid;
    const theirDest = (await c.api('GET', `/servers/${theirServer}/destinations`, other.rootToken)).json[0].uuid;
    const theirProject = (await c.api('POST', '/projects', other.rootToken, { name: 'theirs' })).json.uuid;
    const theirEnv = (await c.api('GET', `/projects/${theirProject}/environments`, other.rootToken)).json[0].uuid;
    const mine = placeOf(c.w);
    const bodies = [
      { ...mine, project_uuid: theirProject },
      { ...mine, server_uuid: theirServer },
      { ...mine, destination_uuid: theirDest },
      { ...mine, environment_name: undefined, environment_uuid: theirEnv },
    ];
    const before = await dump(c.s);
    for (const body of bodies) {
      for (const [path, extra] of [
        ['/applications/dockerimage', { docker_registry_image_name: 'nginx' }],
        ['/databases/redis', {}],
        ['/services', { docker_compose_raw: 'services:\n  a:\n    image: nginx\n' }],
      ] as const) {
        const r = await c.api('POST', path, c.write, { ...body, ...extra });
        expect(r.status, `${path} ${JSON.stringify(body)}: ${r.text}`).toBe(404);
        expect(r.text).toBe(NOT_FOUND);
      }
    }
    // Their destination as a migration target: the same 404.
    const mig = await c.api('POST', `/applications/${c.w.appUuid}/migrate`, c.write, { destination_uuid: theirDest });
    expect(mig.text).toBe(NOT_FOUND);
    expect(await dump(c.s)).toEqual(before);
  });
});
