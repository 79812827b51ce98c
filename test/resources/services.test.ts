import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b64, dump, expectRecordOnlyLifecycle, expectValidation, NOT_FOUND, placeOf, setup, totals, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const STACK = `services:
  app:
    image: ghcr.io/acme/app:3
    environment:
      SECRET_TOKEN: compose-secret-4711
    volumes:
      - app-data:/srv/data
      - type: volume
        source: app-cache
        target: /srv/cache
  worker:
    image: ghcr.io/acme/app:3
    command: ["worker", "--queue", "default"]
    volumes:
      - app-data:/srv/data:ro
volumes:
  app-data:
  app-cache:
`;

const service = (compose: string, extra: Record<string, unknown> = {}) => ({ ...placeOf(c.w), docker_compose_raw: compose, ...extra });

/** A compose body with one service whose extra lines are given (indented under the service). */
const withService = (lines: string, top = '') => `services:\n  app:\n    image: nginx:1.27\n${lines}${top}`;

describe('services: CRUD', () => {
  it('POST /services (base64 compose) → 201 {uuid, domains}; GET shows containers, volumes, and storages', async () => {
    const r = await c.api('POST', '/services', c.write, service(b64(STACK), { name: 'acme-stack', description: 'two containers' }));
    expect(r.status, r.text).toBe(201);
    expect(r.json).toEqual({ uuid: expect.stringMatching(/^[a-z0-9]{24}$/), domains: [] });
    const got = await c.api('GET', `/services/${r.json.uuid}`, c.sensitive);
    expect(got.json).toMatchObject({
      uuid: r.json.uuid,
      name: 'acme-stack',
      description: 'two containers',
      status: 'exited',
      service_type: null,
      docker_compose_raw: STACK, // decoded YAML, as Coolify returns it
      containers: [
        { name: 'app', image: 'ghcr.io/acme/app:3', volumes: ['app-data', 'app-cache'] },
        { name: 'worker', image: 'ghcr.io/acme/app:3', volumes: ['app-data'] },
      ],
      volumes: ['app-data', 'app-cache'],
      server_uuid: c.w.serverUuid,
    });
    const st = await c.api('GET', `/services/${r.json.uuid}/storages`, c.read);
    expect(st.json.persistent_storages.map((s: { name: string; mount_path: string; container: string }) => [s.name, s.mount_path, s.container])).toEqual([
      ['app-data', '/srv/data', 'app'],
      ['app-cache', '/srv/cache', 'app'],
    ]);
    // A service's storage belongs to one of its containers (test/e2e/service-storages.test.ts): Coolify's resource_uuid says which.
    const noPart = await c.api('POST', `/services/${r.json.uuid}/storages`, c.write, { type: 'persistent', name: 'x', mount_path: '/x' });
    expect(noPart.status).toBe(422);
    expect(Object.keys(noPart.json.errors)).toEqual(['resource_uuid']);
  });

  it('plain YAML is accepted too; default name service-<uuid prefix>', async () => {
    const r = await c.api('POST', '/services', c.write, service(withService('')));
    expect(r.status, r.text).toBe(201);
    const got = (await c.api('GET', `/services/${r.json.uuid}`, c.read)).json;
    expect(got.name).toBe(`service-${r.json.uuid.slice(0, 10)}`);
    expect(got.containers).toEqual([{ name: 'app', image: 'nginx:1.27', volumes: [] }]);
  });

  it('PATCH → 200 {uuid, domains}; a new compose replaces containers and storages; DELETE', async () => {
    const { uuid } = (await c.api('POST', '/services', c.write, service(b64(STACK)))).json;
    const next = withService('    volumes:\n      - fresh:/fresh\n');
    const p = await c.api('PATCH', `/services/${uuid}`, c.write, { name: 'patched', docker_compose_raw: b64(next), tags: ['svc'] });
    expect(p.status, p.text).toBe(200);
    expect(p.json).toEqual({ uuid, domains: [] });
    const got = (await c.api('GET', `/services/${uuid}`, c.root)).json;
    expect(got).toMatchObject({ name: 'patched', docker_compose_raw: next, volumes: ['fresh'], tags: ['svc'] });
    const st = (await c.api('GET', `/services/${uuid}/storages`, c.read)).json.persistent_storages;
    expect(st.map((s: { name: string }) => s.name)).toEqual(['fresh']);

    const del = await c.api('DELETE', `/services/${uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Service deleted.' });
    expect((await c.api('GET', `/services/${uuid}`, c.read)).text).toBe(NOT_FOUND);
  });

  it('envs: create 201, duplicate 409, values sensitive', async () => {
    const { uuid } = (await c.api('POST', '/services', c.write, service(b64(STACK)))).json;
    const e = await c.api('POST', `/services/${uuid}/envs`, c.write, { key: 'MODE', value: 'svc-env-secret-5' });
    expect(e.status).toBe(201);
    expect((await c.api('POST', `/services/${uuid}/envs`, c.write, { key: 'MODE', value: 'again' })).status).toBe(409);
    const read = await c.api('GET', `/services/${uuid}/envs`, c.read);
    expect(read.json).toHaveLength(1);
    expect(read.json[0]).not.toHaveProperty('value');
    expect(read.text).not.toContain('svc-env-secret-5');
    expect((await c.api('GET', `/services/${uuid}/envs`, c.sensitive)).json[0].value).toBe('svc-env-secret-5');
    const p = await c.api('PATCH', `/services/${uuid}/envs`, c.write, { key: 'MODE', value: 'changed' });
    expect(p.status).toBe(201);
    const d = await c.api('DELETE', `/services/${uuid}/envs/${e.json.uuid}`, c.write);
    expect(d.status).toBe(200);
  });

  it('docker_compose_raw is sensitive: absent for read in get and list, present for read:sensitive and root', async () => {
    const { uuid } = (await c.api('POST', '/services', c.write, service(b64(STACK)))).json;
    for (const path of [`/services/${uuid}`, '/services', '/resources']) {
      const r = await c.api('GET', path, c.read);
      expect(r.status).toBe(200);
      expect(r.text).not.toContain('compose-secret-4711');
      expect(r.text).not.toContain('docker_compose_raw');
      expect(r.text).not.toContain(b64(STACK).slice(0, 40));
    }
    for (const t of [c.sensitive, c.root]) {
      expect((await c.api('GET', `/services/${uuid}`, t)).json.docker_compose_raw).toBe(STACK);
      const list = (await c.api('GET', '/services', t)).json;
      expect(list.find((s: { uuid: string }) => s.uuid === uuid).docker_compose_raw).toBe(STACK);
    }
  });

  it('start and stop on a record-only server: failed deployments, status unchanged (deploy permission)', async () => {
    await expectRecordOnlyLifecycle(c, 'services', c.w.serviceUuid, ['start', 'stop']);
  });
});

describe('services: compose rules', () => {
  const rejected: [string, string][] = [
    ['mounting the host root', withService('    volumes:\n      - /:/host\n')],
    ['mounting the host root (trailing slashes)', withService('    volumes:\n      - //:/host\n')],
    ['a bind mount of a host path', withService('    volumes:\n      - /etc:/etc-host:ro\n')],
    ['a relative bind mount', withService('    volumes:\n      - ./data:/data\n')],
    ['a home bind mount', withService('    volumes:\n      - ~/.ssh:/keys\n')],
    ['a long-syntax bind mount', withService('    volumes:\n      - type: bind\n        source: /var/run/docker.sock\n        target: /var/run/docker.sock\n')],
    ['the docker socket', withService('    volumes:\n      - /var/run/docker.sock:/var/run/docker.sock\n')],
    ['privileged', withService('    privileged: true\n')],
    ['cap_add', withService('    cap_add:\n      - SYS_ADMIN\n')],
    ['network_mode: host', withService('    network_mode: host\n')],
    ['pid: host', withService('    pid: host\n')],
    ['devices', withService('    devices:\n      - /dev/sda:/dev/sda\n')],
    ['security_opt', withService('    security_opt:\n      - seccomp:unconfined\n')],
    ['an unknown key', withService('    build: .\n')],
    ['a target without a leading slash', withService('    volumes:\n      - data:data\n')],
    ['a target with ..', withService('    volumes:\n      - data:/a/../b\n')],
    ['the root as target', withService('    volumes:\n      - data:/\n')],
    ['an anonymous volume', withService('    volumes:\n      - /data\n')],
    ['a volume name with ;', withService('    volumes:\n      - "x;id:/data"\n')],
    ['an image with ;', 'services:\n  app:\n    image: "nginx;id"\n'],
    ['an image with $(', 'services:\n  app:\n    image: "nginx$(id)"\n'],
    ['an image with a space', 'services:\n  app:\n    image: "nginx latest"\n'],
    ['no image', 'services:\n  app:\n    command: ["x"]\n'],
    ['a service name with ;', 'services:\n  "a;b":\n    image: nginx\n'],
    ['an env key 1BAD', withService('    environment:\n      1BAD: x\n')],
    ['an env key A-B (list form)', withService('    environment:\n      - A-B=x\n')],
    ['ports with an injection', withService('    ports:\n      - "80;id"\n')],
    ['no services', 'volumes:\n  x:\n'],
    ['empty services', 'services: {}\n'],
    ['not YAML', 'services:\n  app: [unclosed\n'],
    ['a YAML scalar', 'just a string'],
  ];

  it.each(rejected)('a write token: %s → 422 on docker_compose_raw, nothing stored', async (_label, compose) => {
    const before = await dump(c.s);
    for (const raw of [compose, b64(compose)]) {
      expectValidation(await c.api('POST', '/services', c.write, service(raw)), ['docker_compose_raw']);
      expectValidation(await c.api('PATCH', `/services/${c.w.serviceUuid}`, c.write, { docker_compose_raw: raw }), ['docker_compose_raw']);
    }
    expect(await dump(c.s)).toEqual(before);
  });

  it('the same compose with a named volume is accepted', async () => {
    const r = await c.api('POST', '/services', c.write, service(b64(withService('    volumes:\n      - host-data:/host\n'))));
    expect(r.status, r.text).toBe(201);
    const got = (await c.api('GET', `/services/${r.json.uuid}`, c.read)).json;
    expect(got.volumes).toEqual(['host-data']);
  });

  it('invalid base64 and non-UTF-8 payloads are 422', async () => {
    const before = await dump(c.s);
    for (const raw of ['!!!not-base64!!!', Buffer.from([0xff, 0xfe, 0xfd, 0x00, 0x81]).toString('base64'), 'c2VydmljZXM6', '']) {
      expectValidation(await c.api('POST', '/services', c.write, service(raw)), ['docker_compose_raw']);
    }
    expect(await dump(c.s)).toEqual(before);
  });

  it('host-reaching settings follow the server, not the token: refused even for root until the root team turns on host access; the host root never', async () => {
    const reaching = service(b64(withService('    privileged: true\n    volumes:\n      - /srv/shared:/shared\n')));
    const refused = await c.api('POST', '/services', c.root, reaching);
    expectValidation(refused, ['docker_compose_raw']);
    expect(refused.json.errors.docker_compose_raw.join('\n')).toMatch(/services\.app\.privileged \(line 4\)/);
    // Only a root token of the root team may switch it on; write is not enough.
    const denied = await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.write, { host_access: true });
    expect(denied.status).toBe(403);
    expect(denied.json).toMatchObject({ missing_permissions: ['root'] });
    expect((await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.root, { host_access: true })).status).toBe(201);
    try {
      expect((await c.api('GET', `/servers/${c.w.serverUuid}`, c.read)).json.host_access).toBe(true);
      const ok = await c.api('POST', '/services', c.write, reaching);
      expect(ok.status, ok.text).toBe(201);
      const before = await dump(c.s);
      for (const source of ['/', '//', '/.', '/./', '/srv/..', '/srv/../']) {
        const r = await c.api('POST', '/services', c.root, service(b64(withService(`    volumes:\n      - "${source}:/host"\n`))));
        expectValidation(r, ['docker_compose_raw']);
      }
      expect(await dump(c.s)).toEqual(before);
    } finally {
      await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.root, { host_access: false });
    }
  });

  it('unknown and forbidden body fields; nothing stored', async () => {
    const before = await dump(c.s);
    const counts = await totals(c);
    expectValidation(await c.api('POST', '/services', c.write, service(b64(STACK), { type: 'gitea', uuid: 'x', team_id: 1 })), ['uuid', 'team_id']);
    expectValidation(await c.api('POST', '/services', c.write, service(b64(STACK), { name: '$(id)' })), ['name']);
    // Neither a compose file nor a one-click type (test/resources/service-templates.test.ts).
    expectValidation(await c.api('POST', '/services', c.write, { ...placeOf(c.w) }), ['type']);
    expectValidation(await c.api('PATCH', `/services/${c.w.serviceUuid}`, c.write, { name: 'a;b' }), ['name']);
    expect(await dump(c.s)).toEqual(before);
    expect(await totals(c)).toEqual(counts);
  });
});
