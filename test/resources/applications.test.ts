import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dump, expectRecordOnlyLifecycle, expectValidation, finished, NOT_FOUND, placeOf, setup, totals, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const image = (extra: Record<string, unknown> = {}) => ({ ...placeOf(c.w), docker_registry_image_name: 'nginx', ...extra });

describe('applications: CRUD', () => {
  it('POST /applications/dockerimage → 201 {uuid, domains}; GET shows Coolify’s fields', async () => {
    const r = await c.api(
      'POST',
      '/applications/dockerimage',
      c.write,
      image({
        name: 'shop-web',
        description: 'storefront',
        docker_registry_image_name: 'ghcr.io/acme/shop',
        docker_registry_image_tag: '2.1.0',
        ports_exposes: '80,443',
        ports_mappings: '8080:80',
        domains: 'https://shop.example.com, https://www.shop.example.com',
        tags: ['shop'],
      }),
    );
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ uuid: expect.stringMatching(/^[a-z0-9]{24}$/), domains: 'https://shop.example.com,https://www.shop.example.com' });
    const got = await c.api('GET', `/applications/${r.json.uuid}`, c.read);
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({
      uuid: r.json.uuid,
      name: 'shop-web',
      description: 'storefront',
      status: 'exited',
      build_pack: 'dockerimage',
      docker_registry_image_name: 'ghcr.io/acme/shop',
      docker_registry_image_tag: '2.1.0',
      ports_exposes: '80,443',
      ports_mappings: '8080:80',
      fqdn: 'https://shop.example.com,https://www.shop.example.com',
      tags: ['shop'],
      project_uuid: c.w.projectUuid,
      server_uuid: c.w.serverUuid,
      destination_uuid: c.w.destinationUuid,
      environment_uuid: c.w.environmentUuid,
    });
    expect(got.json).not.toHaveProperty('id');
  });

  it('defaults: name docker-image-<uuid>, tag latest, a tag inside the image name wins; domains null', async () => {
    const a = await c.api('POST', '/applications/dockerimage', c.write, image({ docker_registry_image_name: 'redis:7.2-alpine' }));
    expect(a.status).toBe(201);
    expect(a.json.domains).toBeNull();
    const got = (await c.api('GET', `/applications/${a.json.uuid}`, c.read)).json;
    expect(got).toMatchObject({ name: `docker-image-${a.json.uuid}`, docker_registry_image_name: 'redis', docker_registry_image_tag: '7.2-alpine', ports_exposes: null, fqdn: null });
    const b = await c.api('POST', '/applications/dockerimage', c.write, image());
    expect((await c.api('GET', `/applications/${b.json.uuid}`, c.read)).json.docker_registry_image_tag).toBe('latest');
    const digest = `sha256:${'a'.repeat(64)}`;
    const d = await c.api('POST', '/applications/dockerimage', c.write, image({ docker_registry_image_name: `nginx@${digest}` }));
    expect(d.status).toBe(201);
    expect((await c.api('GET', `/applications/${d.json.uuid}`, c.read)).json).toMatchObject({ docker_registry_image_name: 'nginx', docker_registry_image_tag: digest });
  });

  it('a server with several destinations needs destination_uuid; a destination of another server is refused', async () => {
    const { uuid: server } = (await c.api('POST', '/servers', c.write, { ip: '10.3.0.1' })).json;
    const extra = (await c.api('POST', `/servers/${server}/destinations`, c.write, { network: 'second' })).json.uuid;
    const before = await dump(c.s);
    expectValidation(await c.api('POST', '/applications/dockerimage', c.write, image({ server_uuid: server })), ['destination_uuid']);
    expectValidation(await c.api('POST', '/applications/dockerimage', c.write, image({ destination_uuid: extra })), ['destination_uuid']);
    expect(await dump(c.s)).toEqual(before);
    const ok = await c.api('POST', '/applications/dockerimage', c.write, image({ server_uuid: server, destination_uuid: extra }));
    expect(ok.status).toBe(201);
    expect((await c.api('GET', `/applications/${ok.json.uuid}`, c.read)).json).toMatchObject({ server_uuid: server, destination_uuid: extra });
  });

  it('PATCH → 200 {uuid}; DELETE → 200 and the app, its envs and storages are gone', async () => {
    const { uuid } = (await c.api('POST', '/applications/dockerimage', c.write, image({ tags: ['a1'] }))).json;
    const p = await c.api('PATCH', `/applications/${uuid}`, c.write, {
      name: 'patched',
      description: null,
      docker_registry_image_tag: '1.27',
      ports_exposes: '8080',
      domains: 'https://patched.example.com',
      tags: ['b2'],
    });
    expect(p.status).toBe(200);
    expect(p.json).toEqual({ uuid });
    expect((await c.api('GET', `/applications/${uuid}`, c.read)).json).toMatchObject({
      name: 'patched',
      description: null,
      docker_registry_image_name: 'nginx',
      docker_registry_image_tag: '1.27',
      ports_exposes: '8080',
      fqdn: 'https://patched.example.com',
      tags: ['b2'],
    });
    // A new image name with its own tag replaces both.
    await c.api('PATCH', `/applications/${uuid}`, c.write, { docker_registry_image_name: 'httpd:2.4' });
    expect((await c.api('GET', `/applications/${uuid}`, c.read)).json).toMatchObject({ docker_registry_image_name: 'httpd', docker_registry_image_tag: '2.4' });

    await c.api('POST', `/applications/${uuid}/envs`, c.write, { key: 'K', value: 'v' });
    await c.api('POST', `/applications/${uuid}/storages`, c.write, { type: 'persistent', name: 'files', mount_path: '/files' });
    const del = await c.api('DELETE', `/applications/${uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Application deleted.' });
    for (const path of [`/applications/${uuid}`, `/applications/${uuid}/envs`, `/applications/${uuid}/storages`]) {
      expect((await c.api('GET', path, c.read)).text).toBe(NOT_FOUND);
    }
    expect((await c.api('DELETE', `/applications/${uuid}`, c.write)).text).toBe(NOT_FOUND);
  });

  it('domains are stored the same way by create and patch (comma-separated, trimmed); null clears them', async () => {
    const { uuid } = (await c.api('POST', '/applications/dockerimage', c.write, image({ domains: 'https://a.example.com , https://b.example.com' }))).json;
    expect((await c.api('GET', `/applications/${uuid}`, c.read)).json.fqdn).toBe('https://a.example.com,https://b.example.com');
    await c.api('PATCH', `/applications/${uuid}`, c.write, { domains: 'https://c.example.com ,  https://d.example.com' });
    expect((await c.api('GET', `/applications/${uuid}`, c.read)).json.fqdn).toBe('https://c.example.com,https://d.example.com');
    await c.api('PATCH', `/applications/${uuid}`, c.write, { domains: null });
    expect((await c.api('GET', `/applications/${uuid}`, c.read)).json.fqdn).toBeNull();
  });

  it('instant_deploy queues a deployment and names it in the create response', async () => {
    const r = await c.api('POST', '/applications/dockerimage', c.root, image({ instant_deploy: true }));
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ uuid: expect.any(String), domains: null, deployment_uuid: expect.stringMatching(/^[a-z0-9]{24}$/) });
    // Record-only server: the deployment ran and failed (nothing to act on), and the app does not claim to run.
    expect(await finished(c, r.json.deployment_uuid)).toMatchObject({ status: 'failed', kind: 'deploy', resource_uuid: r.json.uuid });
    expect((await c.api('GET', `/applications/${r.json.uuid}`, c.read)).json.status).toBe('exited');
  });

  it('lists are bare arrays with paging headers; ?tag= filters', async () => {
    const all = await c.api('GET', '/applications', c.read);
    expect(all.status).toBe(200);
    expect(Array.isArray(all.json)).toBe(true);
    expect(all.headers['x-total-count']).toBe(String(all.json.length));
    expect(all.headers['x-page']).toBe('1');
    expect(all.headers['x-per-page']).toBe(String(all.json.length));
    const tagged = await c.api('GET', '/applications?tag=web', c.read);
    expect(tagged.json.map((a: { uuid: string }) => a.uuid)).toEqual([c.w.appUuid]);
    expect(tagged.headers['x-total-count']).toBe('1');
  });

  it('a database or service uuid is not an application', async () => {
    for (const uuid of [c.w.databaseUuid, c.w.serviceUuid]) {
      expect((await c.api('GET', `/applications/${uuid}`, c.read)).text).toBe(NOT_FOUND);
      expect((await c.api('DELETE', `/applications/${uuid}`, c.write)).text).toBe(NOT_FOUND);
    }
  });
});

describe('applications: validation and injection', () => {
  it('rejects bad names, images, ports, domains, unknown and forbidden fields; nothing stored', async () => {
    const before = await dump(c.s);
    const counts = await totals(c);
    const cases: [Record<string, unknown>, string[]][] = [
      [image({ name: 'main;id' }), ['name']],
      [image({ name: '$(id)' }), ['name']],
      [image({ name: '../x' }), ['name']],
      [image({ docker_registry_image_name: 'nginx;id' }), ['docker_registry_image_name']],
      [image({ docker_registry_image_name: 'nginx$(id)' }), ['docker_registry_image_name']],
      [image({ docker_registry_image_name: 'nginx latest' }), ['docker_registry_image_name']],
      [image({ docker_registry_image_name: '../etc/passwd' }), ['docker_registry_image_name']],
      [image({ docker_registry_image_name: 'nginx@sha256:short' }), ['docker_registry_image_name']],
      [image({ docker_registry_image_tag: 'latest;id' }), ['docker_registry_image_tag']],
      [image({ docker_registry_image_tag: '$(id)' }), ['docker_registry_image_tag']],
      [image({ ports_exposes: '80;id' }), ['ports_exposes']],
      [image({ ports_exposes: '80 443' }), ['ports_exposes']],
      [image({ ports_exposes: '70000' }), ['ports_exposes']],
      [image({ ports_mappings: '8080:80;id' }), ['ports_mappings']],
      [image({ domains: 'javascript:alert(1)' }), ['domains']],
      [image({ domains: 'http://x;id' }), ['domains']],
      [image({ domains: 'https://ok.example.com,http://$(id).example.com' }), ['domains']],
      [image({ domains: 'https://user:pass@example.com' }), ['domains']],
      [image({ domains: 'ftp://example.com' }), ['domains']],
      [image({ tags: ['x'] }), ['tags.0']],
      [image({ tags: ['ok', 'bad;tag'] }), ['tags.1']],
      [image({ uuid: 'mine', team_id: 1, id: 5 }), ['uuid', 'team_id', 'id']],
      [image({ foo: 1, bar: 'x' }), ['foo', 'bar']],
      [image({ status: 'running' }), ['status']],
      [{ ...placeOf(c.w) }, ['docker_registry_image_name']],
    ];
    for (const [body, fields] of cases) expectValidation(await c.api('POST', '/applications/dockerimage', c.write, body), fields);
    // Unknown fields: one error per field, each "This field is not allowed."
    const r = await c.api('POST', '/applications/dockerimage', c.write, image({ foo: 1, bar: 2 }));
    expect(r.json.errors).toEqual({ foo: ['This field is not allowed.'], bar: ['This field is not allowed.'] });

    const patches: [Record<string, unknown>, string[]][] = [
      [{ name: 'a;b' }, ['name']],
      [{ docker_registry_image_name: 'x y' }, ['docker_registry_image_name']],
      [{ ports_exposes: '80;id' }, ['ports_exposes']],
      [{ domains: 'javascript:alert(1)' }, ['domains']],
      [{ uuid: c.w.appUuid }, ['uuid']],
      [{ project_uuid: c.w.projectUuid }, ['project_uuid']],
      [{ destination_uuid: c.w.destination2Uuid }, ['destination_uuid']],
    ];
    for (const [body, fields] of patches) expectValidation(await c.api('PATCH', `/applications/${c.w.appUuid}`, c.write, body), fields);

    // Malformed bodies.
    expectValidation(await c.api('POST', '/applications/dockerimage', c.write, '{"broken'), ['body']);
    expectValidation(await c.api('POST', '/applications/dockerimage', c.write, '[1,2]'), ['body']);
    expect(await dump(c.s)).toEqual(before);
    expect(await totals(c)).toEqual(counts);
  });

  it('a path uuid that is not a uuid is a 422', async () => {
    for (const bad of ['a;b', 'x..y', '$(id)', 'a b', 'a_b']) {
      const r = await c.api('GET', `/applications/${encodeURIComponent(bad)}`, c.read);
      expectValidation(r, ['uuid']);
    }
  });
});

describe('application envs', () => {
  it('create → 201 {uuid}; list; patch by key → 201 env; delete → 200; duplicate key → 409', async () => {
    const { uuid: app } = (await c.api('POST', '/applications/dockerimage', c.write, image())).json;
    const r = await c.api('POST', `/applications/${app}/envs`, c.write, { key: 'DATABASE_URL', value: 'postgres://u:env-secret-1@db/x', comment: 'the db' });
    expect(r.status).toBe(201);
    expect(Object.keys(r.json)).toEqual(['uuid']);

    const dup = await c.api('POST', `/applications/${app}/envs`, c.write, { key: 'DATABASE_URL', value: 'other' });
    expect(dup.status).toBe(409);
    expect(dup.json).toEqual({ message: 'Environment variable already exists. Use PATCH request to update it.' });
    // The preview set is separate.
    expect((await c.api('POST', `/applications/${app}/envs`, c.write, { key: 'DATABASE_URL', value: 'preview', is_preview: true })).status).toBe(201);

    const list = await c.api('GET', `/applications/${app}/envs`, c.sensitive);
    expect(list.status).toBe(200);
    expect(list.json).toHaveLength(2);
    expect(list.json[0]).toMatchObject({
      uuid: r.json.uuid,
      key: 'DATABASE_URL',
      value: 'postgres://u:env-secret-1@db/x',
      comment: 'the db',
      is_preview: false,
      is_literal: false,
      is_multiline: false,
      is_shown_once: false,
      is_runtime: true,
      is_buildtime: true,
    });
    expect(list.json[1]).toMatchObject({ key: 'DATABASE_URL', value: 'preview', is_preview: true });

    const p = await c.api('PATCH', `/applications/${app}/envs`, c.write, { key: 'DATABASE_URL', value: 'changed', is_literal: true });
    expect(p.status).toBe(201);
    expect(p.json).toMatchObject({ uuid: r.json.uuid, key: 'DATABASE_URL', is_literal: true });
    expect(p.json).not.toHaveProperty('value'); // write token: redacted
    const p2 = await c.api('PATCH', `/applications/${app}/envs`, c.root, { key: 'DATABASE_URL', value: 'changed-again' });
    expect(p2.json.value).toBe('changed-again');
    const missing = await c.api('PATCH', `/applications/${app}/envs`, c.write, { key: 'NOPE', value: 'x' });
    expect(missing.status).toBe(404);

    const del = await c.api('DELETE', `/applications/${app}/envs/${r.json.uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Environment variable deleted.' });
    expect((await c.api('DELETE', `/applications/${app}/envs/${r.json.uuid}`, c.write)).text).toBe(NOT_FOUND);
    expect((await c.api('GET', `/applications/${app}/envs`, c.read)).json).toHaveLength(1);
  });

  it('values are sensitive; is_shown_once never shows its value', async () => {
    const { uuid: app } = (await c.api('POST', '/applications/dockerimage', c.write, image())).json;
    await c.api('POST', `/applications/${app}/envs`, c.write, { key: 'VISIBLE', value: 'visible-secret-42' });
    await c.api('POST', `/applications/${app}/envs`, c.write, { key: 'ONCE', value: 'shown-once-secret-77', is_shown_once: true });
    const read = await c.api('GET', `/applications/${app}/envs`, c.read);
    for (const e of read.json) expect(e).not.toHaveProperty('value');
    expect(read.text).not.toContain('visible-secret-42');
    expect(read.text).not.toContain('shown-once-secret-77');
    for (const t of [c.sensitive, c.root]) {
      const r = await c.api('GET', `/applications/${app}/envs`, t);
      const byKey = Object.fromEntries(r.json.map((e: { key: string }) => [e.key, e]));
      expect(byKey.VISIBLE.value).toBe('visible-secret-42');
      expect(byKey.ONCE).not.toHaveProperty('value');
      expect(byKey.ONCE.is_shown_once).toBe(true);
      expect(r.text).not.toContain('shown-once-secret-77');
    }
    const p = await c.api('PATCH', `/applications/${app}/envs`, c.root, { key: 'ONCE', comment: 'still hidden' });
    expect(p.status).toBe(201);
    expect(p.json).not.toHaveProperty('value');
    // Stored all the same.
    const row = await c.s.db.selectFrom('environment_variables').select('value').where('key', '=', 'ONCE').executeTakeFirstOrThrow();
    expect(row.value).toBe('shown-once-secret-77');
  });

  it('bad keys, unknown fields and NULs are 422; nothing stored', async () => {
    const before = await dump(c.s);
    for (const key of ['1BAD', 'A-B', 'A;B', '$(id)', 'A B', '', 'A=B']) {
      expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/envs`, c.write, { key, value: 'x' }), ['key']);
    }
    expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/envs`, c.write, { key: 'OK', value: 'a\u0000b' }), ['value']);
    expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/envs`, c.write, { key: 'OK', value: 'x', resource_id: 1, id: 2 }), ['resource_id', 'id']);
    // The path's uuid may not be repeated (or overridden) in the body.
    expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/envs`, c.write, { key: 'OK', value: 'x', uuid: c.w.serviceUuid }), ['uuid']);
    expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/envs`, c.write, { key: 'OK', value: 'x', is_shown_once: 'yes' }), ['is_shown_once']);
    expectValidation(await c.api('PATCH', `/applications/${c.w.appUuid}/envs`, c.write, { key: 'A;B', value: 'x' }), ['key']);
    expect(await dump(c.s)).toEqual(before);
  });
});

describe('application storages', () => {
  it('create → 201 storage; list is {persistent_storages, file_storages}; delete', async () => {
    const { uuid: app } = (await c.api('POST', '/applications/dockerimage', c.write, image())).json;
    const r = await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'persistent', name: 'uploads', mount_path: '/var/www/uploads' });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ uuid: expect.any(String), name: 'uploads', mount_path: '/var/www/uploads', volume_name: `${app}-uploads` });
    const list = await c.api('GET', `/applications/${app}/storages`, c.read);
    expect(list.status).toBe(200);
    expect(Object.keys(list.json).sort()).toEqual(['file_storages', 'persistent_storages']);
    expect(list.json.persistent_storages).toEqual([r.json]);
    expect(list.json.file_storages).toEqual([]);

    const before = await dump(c.s);
    expectValidation(await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'persistent', name: 'uploads', mount_path: '/other' }), ['name']);
    expectValidation(await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'persistent', name: 'other', mount_path: '/var/www/uploads' }), ['mount_path']);
    expect(await dump(c.s)).toEqual(before);

    const del = await c.api('DELETE', `/applications/${app}/storages/${r.json.uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Storage deleted.' });
    expect((await c.api('GET', `/applications/${app}/storages`, c.read)).json.persistent_storages).toEqual([]);
    expect((await c.api('DELETE', `/applications/${app}/storages/${r.json.uuid}`, c.write)).text).toBe(NOT_FOUND);
  });

  it('mount paths and names are validated; nothing stored', async () => {
    const before = await dump(c.s);
    const base = { type: 'persistent', name: 'vol' };
    for (const mount_path of ['data', '/a/../b', '/', '//', '/a;id', '/$(id)', '/a b', '../x']) {
      expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/storages`, c.write, { ...base, mount_path }), ['mount_path']);
    }
    for (const name of ['../x', 'a;b', '$(id)', '/abs', 'a b', '-x']) {
      expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/storages`, c.write, { ...base, name, mount_path: '/ok' }), ['name']);
    }
    const wrong = await c.api('POST', `/applications/${c.w.appUuid}/storages`, c.write, { type: 'file', name: 'x', mount_path: '/ok' });
    expect(wrong.json.errors).toEqual({ name: ["Field 'name' is not valid for type 'file'."] });
    expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/storages`, c.write, { ...base, mount_path: '/ok', content: 'x' }), ['content']);
    expectValidation(await c.api('POST', `/applications/${c.w.appUuid}/storages`, c.write, { type: 'tmpfs', mount_path: '/ok' }), ['type']);
    // Coolify fields berth cannot apply are refused by name, saying so (not as unknown fields).
    const host = await c.api('POST', `/applications/${c.w.appUuid}/storages`, c.write, { ...base, mount_path: '/ok', host_path: '/etc' });
    expect(host.status).toBe(422);
    expect(host.json.errors.host_path[0]).toMatch(/^berth does not support this Coolify field yet: .*host paths/);
    const fsPath = await c.api('POST', `/applications/${c.w.appUuid}/storages`, c.write, { type: 'file', is_directory: true, fs_path: '/data/x', mount_path: '/ok', bogus: 1 });
    expect(fsPath.json.errors.fs_path[0]).toMatch(/^berth does not support this Coolify field yet/);
    expect(fsPath.json.errors.bogus).toEqual(['This field is not allowed.']);
    expect(await dump(c.s)).toEqual(before);
  });

  it('file storages: a file with its content or a directory; listed with contents for read:sensitive only; updated by uuid or id; deleted', async () => {
    const { uuid: app } = (await c.api('POST', '/applications/dockerimage', c.write, image())).json;
    const file = await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'file', mount_path: '/etc/app/config.ini', content: 'token=s3cr3t-f1le\n' });
    expect(file.status).toBe(201);
    expect(file.json).toMatchObject({ uuid: expect.any(String), id: expect.any(Number), mount_path: '/etc/app/config.ini', is_directory: false });
    const dir = await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'file', mount_path: '/var/cache/app', is_directory: true });
    expect(dir.json).toMatchObject({ mount_path: '/var/cache/app', is_directory: true });
    expectValidation(await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'file', mount_path: '/var/cache/app' }), ['mount_path']);
    expectValidation(await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'persistent', name: 'v', mount_path: '/etc/app/config.ini' }), ['mount_path']);
    expectValidation(await c.api('POST', `/applications/${app}/storages`, c.write, { type: 'file', mount_path: '/d', is_directory: true, content: 'x' }), ['content']);

    const read = await c.api('GET', `/applications/${app}/storages`, c.read);
    expect(read.text).not.toContain('s3cr3t-f1le');
    expect(read.json.file_storages.map((f: { mount_path: string }) => f.mount_path)).toEqual(['/etc/app/config.ini', '/var/cache/app']);
    const sensitive = await c.api('GET', `/applications/${app}/storages`, c.sensitive);
    expect(sensitive.json.file_storages[0].content).toBe('token=s3cr3t-f1le\n');

    // Coolify names the storage by body uuid (preferred) or id; berth's storage_uuid still works.
    const byUuid = await c.api('PATCH', `/applications/${app}/storages`, c.write, { uuid: file.json.uuid, type: 'file', content: 'token=rotated\n' });
    expect(byUuid.status).toBe(200);
    const byId = await c.api('PATCH', `/applications/${app}/storages`, c.write, { id: file.json.id, type: 'file', mount_path: '/etc/app/app.ini' });
    expect(byId.status).toBe(200);
    const now = (await c.api('GET', `/applications/${app}/storages`, c.sensitive)).json.file_storages[0];
    expect(now).toMatchObject({ uuid: file.json.uuid, mount_path: '/etc/app/app.ini', content: 'token=rotated\n' });
    expectValidation(await c.api('PATCH', `/applications/${app}/storages`, c.write, { type: 'file', content: 'x' }), ['storage_uuid']);
    expectValidation(await c.api('PATCH', `/applications/${app}/storages`, c.write, { uuid: file.json.uuid, storage_uuid: file.json.uuid, content: 'x' }), ['uuid']);
    expect((await c.api('PATCH', `/applications/${app}/storages`, c.write, { uuid: file.json.uuid, type: 'persistent', mount_path: '/x' })).status).toBe(404);
    const other = await c.s.team('File storages elsewhere');
    const foreign = await c.api('PATCH', `/applications/${app}/storages`, other.rootToken, { id: file.json.id, content: 'theirs' });
    expect(foreign.text).toBe(NOT_FOUND);

    expect((await c.api('DELETE', `/applications/${app}/storages/${file.json.uuid}`, c.write)).json).toEqual({ message: 'Storage deleted.' });
    expect((await c.api('GET', `/applications/${app}/storages`, c.read)).json.file_storages.map((f: { uuid: string }) => f.uuid)).toEqual([dir.json.uuid]);
    expect((await c.api('DELETE', `/applications/${app}/storages/${file.json.uuid}`, c.write)).text).toBe(NOT_FOUND);
  });
});

describe('application logs and lifecycle', () => {
  it('logs need read:sensitive (or root): read gets 403, read:sensitive gets {logs, truncated}', async () => {
    const denied = await c.api('GET', `/applications/${c.w.appUuid}/logs`, c.read);
    expect(denied.status).toBe(403);
    expect(denied.json).toEqual({ message: 'Missing required permissions: read:sensitive', missing_permissions: ['read:sensitive'] });
    for (const t of [c.sensitive, c.root]) {
      const r = await c.api('GET', `/applications/${c.w.appUuid}/logs?lines=50`, t);
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ logs: expect.any(String), truncated: false });
    }
    expectValidation(await c.api('GET', `/applications/${c.w.appUuid}/logs?lines=0`, c.sensitive), ['lines']);
    expectValidation(await c.api('GET', `/applications/${c.w.appUuid}/logs?lines=abc`, c.sensitive), ['lines']);
  });

  it('start, stop, restart on a record-only server: each a failed deployment saying nothing ran, the status unchanged', async () => {
    const { uuid: app } = (await c.api('POST', '/applications/dockerimage', c.write, image())).json;
    await expectRecordOnlyLifecycle(c, 'applications', app, ['start', 'stop', 'restart']);
    // write alone may not start things.
    expect((await c.api('POST', `/applications/${app}/start`, c.write)).status).toBe(403);
  });
});
