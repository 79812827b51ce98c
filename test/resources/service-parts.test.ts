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

  it('GET /services/{uuid} carries the same applications and databases, as Coolify loads them', async () => {
    const made = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml('') });
    const uuid = made.json.uuid as string;
    await c.api('PATCH', `/services/${uuid}/applications/${(await c.api('GET', `/services/${uuid}/applications`, c.read)).json[0].uuid}`, c.write, { human_name: 'Front' });
    const one = await c.api('GET', `/services/${uuid}`, c.read);
    expect(one.status).toBe(200);
    expect(one.json.applications).toEqual((await c.api('GET', `/services/${uuid}/applications`, c.read)).json);
    expect(one.json.databases).toEqual((await c.api('GET', `/services/${uuid}/databases`, c.read)).json);
    expect(one.json.applications).toEqual([
      { uuid: expect.stringMatching(/^[a-z0-9]{24}$/), name: 'web', human_name: 'Front', description: null, image: 'localhost/berth-busybox:latest', status: expect.any(String), fqdn: null },
    ]);
    expect(one.json.databases).toEqual([
      { uuid: expect.stringMatching(/^[a-z0-9]{24}$/), name: 'db', human_name: null, description: null, image: 'docker.io/library/postgres:16-alpine', status: expect.any(String) },
    ]);
    // The list keeps Coolify's list shape (no sub-resources there).
    const listed = (await c.api('GET', '/services', c.read)).json.find((x: { uuid: string }) => x.uuid === uuid);
    expect(listed).not.toHaveProperty('applications');
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
    // Coolify's route answers POST as well (the same read, the same permission, lines from the query or the body).
    expect((await c.api('POST', `${base}/logs?lines=5`, c.read)).status).toBe(403);
    expect((await c.api('POST', `${base}/logs?lines=5`, c.sensitive)).json).toEqual({ logs: '' });
    expect((await c.api('POST', `${base}/logs`, c.sensitive, { lines: 5 })).json).toEqual({ logs: '' });
    expect((await c.api('POST', `${base}/logs`, c.sensitive, { nope: 1 })).status).toBe(422);
    const dbPart = (await c.api('GET', `/services/${c.w.serviceUuid}/databases`, c.read)).json[0].uuid;
    expect((await c.api('POST', `/services/${c.w.serviceUuid}/databases/${dbPart}/logs`, c.sensitive)).status).toBe(405);
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

describe("Coolify's service fields", () => {
  it('a service application takes url (its URLs); another resource’s domain is a 409 unless force_domain_override', async () => {
    const made = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml('') });
    const uuid = made.json.uuid as string;
    const web = (await c.api('GET', `/services/${uuid}/applications`, c.read)).json[0].uuid as string;
    const set = await c.api('PATCH', `/services/${uuid}/applications/${web}`, c.write, { url: 'https://shop.example.com, http://shop.example.com:8080' });
    expect(set.status, set.text).toBe(200);
    expect(set.json.fqdn).toBe('https://shop.example.com,http://shop.example.com:8080');
    expect((await c.api('GET', `/services/${uuid}/applications/${web}`, c.read)).json.fqdn).toBe('https://shop.example.com,http://shop.example.com:8080');
    // Setting the same URLs again on itself is no conflict.
    expect((await c.api('PATCH', `/services/${uuid}/applications/${web}`, c.write, { url: 'https://shop.example.com' })).status).toBe(200);

    const app = await c.api('POST', '/applications/dockerimage', c.write, { ...placeOf(c.w), docker_registry_image_name: 'nginx', domains: 'https://taken.example.com' });
    expect(app.status).toBe(201);
    const clash = await c.api('PATCH', `/services/${uuid}/applications/${web}`, c.write, { url: 'https://TAKEN.example.com' });
    expect(clash.status).toBe(409);
    expect(clash.json.message).toContain('taken.example.com is used by application');
    expect(clash.json.message).toContain('force_domain_override=true');
    expect((await c.api('GET', `/services/${uuid}/applications/${web}`, c.read)).json.fqdn).toBe('https://shop.example.com');
    const forced = await c.api('PATCH', `/services/${uuid}/applications/${web}?force_domain_override=true`, c.write, { url: 'https://taken.example.com' });
    expect(forced.status).toBe(200);
    expect(forced.json.fqdn).toBe('https://taken.example.com');
    // Another team's domain is not this team's conflict (and is never named).
    const other = await c.s.team('Domains elsewhere');
    const theirs = await c.api('PATCH', `/services/${uuid}/applications/${web}`, other.rootToken, { url: 'https://x.example.com' });
    expect(theirs.status).toBe(404);
    expect((await c.api('PATCH', `/services/${uuid}/applications/${web}`, c.write, { url: 'ftp://x' })).status).toBe(422);
    expect((await c.api('PATCH', `/services/${uuid}/applications/${web}`, c.write, { url: null })).json.fqdn).toBeNull();
    const db = (await c.api('GET', `/services/${uuid}/databases`, c.read)).json[0].uuid as string;
    expect((await c.api('PATCH', `/services/${uuid}/databases/${db}`, c.write, { url: 'https://db.example.com' })).json.errors).toEqual({ url: ['This field is not allowed.'] });
  });

  it("Coolify's urls on service create and update: each application's URLs by name, claimed like any domain", async () => {
    const made = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml(''), urls: [{ name: 'web', url: 'https://a.example.com, http://a.example.com:8080' }] });
    expect(made.status, made.text).toBe(201);
    expect(made.json.domains).toEqual(['https://a.example.com,http://a.example.com:8080']);
    const uuid = made.json.uuid as string;
    expect((await c.api('GET', `/services/${uuid}/applications`, c.read)).json[0].fqdn).toBe('https://a.example.com,http://a.example.com:8080');
    // No proxy on a record-only server: nothing answers, so no proxy status.
    expect((await c.api('GET', `/services/${uuid}`, c.read)).json.proxy_status).toBeNull();
    // A database, a name the service lacks, one URL twice: 422 naming it; nothing is made.
    for (const urls of [[{ name: 'db', url: 'https://b.example.com' }], [{ name: 'nope', url: 'https://b.example.com' }]]) {
      const r = await c.api('POST', '/services', c.write, { ...placeOf(c.w), name: 'refused', docker_compose_raw: yaml(''), urls });
      expect(r.status, r.text).toBe(422);
      expect(r.json.errors.urls[0]).toContain(`'${urls[0]!.name}' not found`);
    }
    expect((await c.api('GET', '/services', c.read)).json.some((s: { name: string }) => s.name === 'refused')).toBe(false);
    // Another service wanting a's domain: 409 naming the holder; force_domain_override shares it.
    const clash = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml(''), urls: [{ name: 'web', url: 'https://a.example.com' }] });
    expect(clash.status).toBe(409);
    expect(clash.json.message).toContain('a.example.com is used by service');
    // Update: move it, clear it.
    const moved = await c.api('PATCH', `/services/${uuid}`, c.write, { urls: [{ name: 'web', url: 'https://c.example.com' }] });
    expect(moved.json).toEqual({ uuid, domains: ['https://c.example.com'] });
    expect((await c.api('PATCH', `/services/${uuid}`, c.write, { urls: [{ name: 'web', url: null }] })).json.domains).toEqual([]);
    expect((await c.api('PATCH', `/services/${uuid}`, c.write, { urls: [{ name: 'web', url: 'ftp://x' }] })).status).toBe(422);
    expect((await c.api('PATCH', `/services/${uuid}`, c.write, { urls: [{ name: 'web', url: 'https://d.example.com', extra: 1 }] })).status).toBe(422);
  });

  it('a one-click template berth lacks names the list; the network switch is kept', async () => {
    const oneClick = await c.api('POST', '/services', c.write, { ...placeOf(c.w), type: 'gitea-with-mysql' });
    expect(oneClick.status).toBe(422);
    expect(oneClick.json.errors.type).toEqual(['Unknown service type "gitea-with-mysql". list_service_templates (GET /api/v1/services/templates) lists the types.']);
    const made = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml('') });
    const uuid = made.json.uuid as string;
    expect((await c.api('PATCH', `/services/${uuid}`, c.write, { connect_to_docker_network: true })).status).toBe(200);
    expect((await c.api('GET', `/services/${uuid}`, c.read)).json.connect_to_docker_network).toBe(true);
    expect((await c.api('PATCH', `/services/${uuid}`, c.write, { connect_to_docker_network: false })).status).toBe(200);
    expect((await c.api('GET', `/services/${uuid}`, c.read)).json.connect_to_docker_network).toBe(false);
    expect((await c.api('PATCH', `/services/${uuid}`, c.write, { connect_to_docker_network: 'no' })).status).toBe(422);
  });

  it('service logs take sub_service_name (a container that is not there is a 404) and show_timestamps; restart takes latest', async () => {
    const made = await c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: yaml('') });
    const uuid = made.json.uuid as string;
    expect((await c.api('GET', `/services/${uuid}/logs?sub_service_name=web&show_timestamps=true`, c.sensitive)).json).toEqual({ logs: '', truncated: false });
    expect((await c.api('GET', `/services/${uuid}/logs?sub_service_name=nope`, c.sensitive)).status).toBe(404);
    expect((await c.api('GET', `/services/${uuid}/logs?show_timestamps=maybe`, c.sensitive)).status).toBe(422);
    const r = await c.api('POST', `/services/${uuid}/restart?latest=true`, c.deploy);
    expect(r.status, r.text).toBe(200);
    expect((await c.api('GET', `/deployments/${r.json.deployment_uuid}`, c.read)).json).toMatchObject({ kind: 'restart', force_rebuild: true });
    expect((await c.api('POST', `/applications/${c.w.appUuid}/restart?latest=true`, c.deploy)).json.errors).toEqual({ latest: ['This field is not allowed.'] });
  });
});
