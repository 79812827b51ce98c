/**
 * GET /services/{uuid}/applications and /databases (Coolify's service applications and service
 * databases): a service's compose containers split by image; each part's uuid stays while its
 * compose service name stays; another team's service is a 404 like a missing one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b64, placeOf, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const yaml = (extra: string) => b64(`services:\n  web:\n    image: localhost/berth-busybox:latest\n    command: ["sleep", "3600"]\n  db:\n    image: docker.io/library/postgres:16-alpine\n${extra}`);

describe('service applications and databases', () => {
  it('splits containers by image and keeps uuids across compose updates', async () => {
    const made = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml('') });
    expect(made.status).toBe(201);
    const uuid = made.json.uuid as string;
    const apps = await c.api('GET', `/services/${uuid}/applications`, c.read);
    const dbs = await c.api('GET', `/services/${uuid}/databases`, c.read);
    expect(apps.status).toBe(200);
    expect((apps.json as Array<{ name: string }>).map((p) => p.name)).toEqual(['web']);
    expect((dbs.json as Array<{ name: string; image: string }>).map((p) => p.name)).toEqual(['db']);
    const webUuid = apps.json[0].uuid as string;
    expect(webUuid).toMatch(/^[a-z0-9]{24}$/);
    expect(webUuid).not.toBe(dbs.json[0].uuid);

    const upd = await c.api('PATCH', `/services/${uuid}`, c.write, { docker_compose_raw: yaml('  cache:\n    image: docker.io/library/redis:7\n') });
    expect(upd.status).toBe(200);
    const after = await c.api('GET', `/services/${uuid}/databases`, c.read);
    expect((after.json as Array<{ name: string }>).map((p) => p.name).sort()).toEqual(['cache', 'db']);
    expect((await c.api('GET', `/services/${uuid}/applications`, c.read)).json[0].uuid).toBe(webUuid);
  });

  it("is a 404 for another team's service as for a missing one", async () => {
    const other = await c.s.team('Parts other');
    const foreign = await c.api('GET', `/services/${c.w.serviceUuid}/applications`, other.rootToken);
    const missing = await c.api('GET', `/services/nosuchservice/applications`, other.rootToken);
    expect(foreign.status).toBe(404);
    expect(foreign.json).toEqual(missing.json);
    expect((await c.api('GET', `/services/${c.w.serviceUuid}/databases`, other.rootToken)).status).toBe(404);
  });
});

describe('classification by image', () => {
  it('treats database images from any registry and tag as databases, and their tools as applications', async () => {
    const { isDatabaseImage } = await import('../../src/core/operations/service-parts.js');
    expect(['postgres:16', 'docker.io/library/redis:7', 'bitnami/mariadb', 'ghcr.io/x/clickhouse@sha256:ab', 'mongo'].filter((i) => !isDatabaseImage(i))).toEqual([]);
    expect(['mongo-express', 'localhost/berth-busybox:latest', 'adminer', 'redis-commander/redis-commander'].filter((i) => isDatabaseImage(i))).toEqual([]);
  });

  it('one part: get, describe, logs (read:sensitive), and actions on a record-only server answer what berth did', async () => {
    const apps = (await c.api('GET', `/services/${c.w.serviceUuid}/applications`, c.read)).json;
    const web = apps[0].uuid as string;
    const base = `/services/${c.w.serviceUuid}/applications/${web}`;
    expect((await c.api('GET', base, c.read)).json).toMatchObject({ uuid: web, name: 'web', human_name: null });
    const p = await c.api('PATCH', base, c.write, { human_name: 'Front door', description: 'nginx in front' });
    expect(p.json).toMatchObject({ uuid: web, human_name: 'Front door', description: 'nginx in front' });
    expect((await c.api('GET', `/services/${c.w.serviceUuid}/applications`, c.read)).json[0].human_name).toBe('Front door');
    expect((await c.api('PATCH', base, c.write, {})).status).toBe(422);
    expect((await c.api('PATCH', base, c.write, { image: 'evil' })).status).toBe(422);
    expect((await c.api('GET', `${base}/logs`, c.read)).status).toBe(403);
    expect((await c.api('GET', `${base}/logs`, c.sensitive)).json).toEqual({ logs: '' });
    expect((await c.api('POST', `${base}/stop`, c.read)).status).toBe(403);
    const stop = await c.api('POST', `${base}/stop`, c.deploy);
    expect(stop.status).toBe(200);
    expect(stop.json.message).toMatch(/no engine berth can reach/);
  });

  it('a part uuid of another kind, another service or another team is the same 404 as a missing one', async () => {
    const apps = (await c.api('GET', `/services/${c.w.serviceUuid}/applications`, c.read)).json;
    const dbs = (await c.api('GET', `/services/${c.w.serviceUuid}/databases`, c.read)).json;
    const other = await c.s.team('Parts third');
    for (const [token, path] of [
      [c.read, `/services/${c.w.serviceUuid}/databases/${apps[0].uuid}`],
      [c.read, `/services/${c.w.serviceUuid}/applications/${dbs[0].uuid}`],
      [c.read, `/services/${c.w.serviceUuid}/applications/aaaaaaaaaaaaaaaaaaaaaaaa`],
      [other.rootToken, `/services/${c.w.serviceUuid}/applications/${apps[0].uuid}`],
    ] as const) {
      const r = await c.api('GET', path, token);
      expect(r.status, path).toBe(404);
      expect(r.text).toBe('{"message":"Resource not found."}');
    }
  });
});
