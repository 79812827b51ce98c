/**
 * Coolify's runtime fields at the door and in the plan: health_check_* and limits_* are taken,
 * stored and shown with Coolify's defaults; bad values are a 422 naming the field; run options
 * that reach into the host are refused naming the option unless the server has host access;
 * berth.* labels cannot be set; the plan (what a deploy makes the engine match) carries them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planResource } from '../../src/engine/plan.js';
import { b64, dump, expectValidation, placeOf, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const app = (extra: Record<string, unknown> = {}) => c.api('POST', '/applications/dockerimage', c.write, { ...placeOf(c.w), docker_registry_image_name: 'nginx', ports_exposes: '8080', ...extra });
const planOf = async (uuid: string) => {
  const row = await c.s.db.selectFrom('resources').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow();
  return planResource(c.s.db, row.id);
};

describe('applications: health check and limits', () => {
  it('GET shows Coolify’s defaults for what was not set, and the plan has no check and no limits', async () => {
    const r = await app();
    expect(r.status, r.text).toBe(201);
    const got = (await c.api('GET', `/applications/${r.json.uuid}`, c.read)).json;
    expect(got).toMatchObject({
      health_check_enabled: false,
      health_check_path: '/',
      health_check_port: null,
      health_check_host: 'localhost',
      health_check_method: 'GET',
      health_check_scheme: 'http',
      health_check_return_code: 200,
      health_check_response_text: null,
      health_check_interval: 5,
      health_check_timeout: 5,
      health_check_retries: 10,
      health_check_start_period: 5,
      limits_memory: '0',
      limits_memory_swap: '0',
      limits_memory_swappiness: 60,
      limits_memory_reservation: '0',
      limits_cpus: '0',
      limits_cpuset: null,
      limits_cpu_shares: 1024,
      custom_labels: null,
      custom_docker_run_options: null,
    });
    const spec = (await planOf(r.json.uuid)).containers[0]!.spec;
    expect(spec.healthcheck).toBeUndefined();
    expect(spec.limits).toBeUndefined();
  });

  it('set at create and by PATCH, shown by GET, planned as the engine’s healthcheck and HostConfig limits', async () => {
    const r = await app({
      health_check_enabled: true,
      health_check_path: '/healthz',
      health_check_return_code: 204,
      health_check_response_text: 'ok',
      health_check_interval: 7,
      limits_memory: '256m',
      limits_cpus: '1.5',
    });
    expect(r.status, r.text).toBe(201);
    const p = await c.api('PATCH', `/applications/${r.json.uuid}`, c.write, {
      health_check_method: 'Post',
      health_check_retries: 2,
      limits_memory_swap: '1g',
      limits_memory_reservation: '128m',
      limits_cpuset: '0-1',
      limits_cpu_shares: 512,
      limits_memory_swappiness: 10,
    });
    expect(p.status, p.text).toBe(200);
    const got = (await c.api('GET', `/applications/${r.json.uuid}`, c.read)).json;
    expect(got).toMatchObject({
      health_check_enabled: true,
      health_check_path: '/healthz',
      health_check_method: 'POST',
      health_check_return_code: 204,
      health_check_response_text: 'ok',
      health_check_interval: 7,
      health_check_retries: 2,
      limits_memory: '256m',
      limits_memory_swap: '1g',
      limits_memory_reservation: '128m',
      limits_cpus: '1.5',
      limits_cpuset: '0-1',
      limits_cpu_shares: 512,
      limits_memory_swappiness: 10,
    });
    const spec = (await planOf(r.json.uuid)).containers[0]!.spec;
    expect(spec.limits).toEqual({ memory: 256 * 2 ** 20, memorySwap: 2 ** 30, memoryReservation: 128 * 2 ** 20, nanoCpus: 1.5e9, cpusetCpus: '0-1', cpuShares: 512, memorySwappiness: 10 });
    expect(spec.healthcheck).toMatchObject({ intervalS: 7, timeoutS: 5, retries: 2, startPeriodS: 5 });
    const [kind, script] = spec.healthcheck!.test;
    expect(kind).toBe('CMD-SHELL');
    // The first exposed port, the method, the code and the text; curl when there, else wget.
    expect(script).toContain('localhost\\:8080/healthz');
    expect(script).toContain('curl -s -k -X POST');
    expect(script).toContain('wget -q -S -O-');
    expect(script).toContain('[ "$s" = 204 ] || exit 1');
    expect(script).toContain('*ok*');
    // "0" is no limit again.
    await c.api('PATCH', `/applications/${r.json.uuid}`, c.write, {
      limits_memory: '0',
      limits_memory_swap: '0',
      limits_memory_reservation: '0',
      limits_cpus: '0',
      limits_cpuset: null,
      health_check_enabled: false,
    });
    const after = (await planOf(r.json.uuid)).containers[0]!.spec;
    expect(after.limits).toEqual({ cpuShares: 512, memorySwappiness: 10 });
    expect(after.healthcheck).toBeUndefined();
    // Coolify's defaults sent back (as Coolify clients do) set nothing on the engine.
    await c.api('PATCH', `/applications/${r.json.uuid}`, c.write, { limits_cpu_shares: 1024, limits_memory_swappiness: 60 });
    expect((await planOf(r.json.uuid)).containers[0]!.spec.limits).toBeUndefined();
  });

  it('bad values are a 422 naming the field, and nothing is stored', async () => {
    const before = await dump(c.s);
    expectValidation(await app({ limits_memory: 'lots' }), ['limits_memory']);
    expectValidation(await app({ limits_memory: '1m' }), ['limits_memory']);
    expectValidation(await app({ limits_memory: '512m', limits_memory_swap: '256m' }), ['limits_memory_swap']);
    expectValidation(await app({ limits_memory_swap: '1g' }), ['limits_memory_swap']);
    expectValidation(await app({ limits_memory: '256m', limits_memory_reservation: '1g' }), ['limits_memory_reservation']);
    expectValidation(await app({ limits_cpus: '-1' }), ['limits_cpus']);
    expectValidation(await app({ limits_cpus: '0.001' }), ['limits_cpus']);
    expectValidation(await app({ limits_cpuset: '0;1' }), ['limits_cpuset']);
    expectValidation(await app({ limits_memory_swappiness: 101 }), ['limits_memory_swappiness']);
    expectValidation(await app({ limits_memory: 512 }), ['limits_memory']);
    expectValidation(await app({ health_check_path: 'healthz' }), ['health_check_path']);
    expectValidation(await app({ health_check_port: '80; id' }), ['health_check_port']);
    expectValidation(await app({ health_check_host: 'a b' }), ['health_check_host']);
    expectValidation(await app({ health_check_method: 'DELETE' }), ['health_check_method']);
    expectValidation(await app({ health_check_return_code: 700 }), ['health_check_return_code']);
    expectValidation(await app({ health_check_interval: 0 }), ['health_check_interval']);
    expect(await dump(c.s)).toEqual(before);
    const { uuid } = (await app()).json;
    expectValidation(await c.api('PATCH', `/applications/${uuid}`, c.write, { limits_memory: '100m', limits_memory_swap: '50m' }), ['limits_memory_swap']);
    expect((await c.api('GET', `/applications/${uuid}`, c.read)).json.limits_memory).toBe('0');
  });
});

describe('applications: custom_docker_run_options', () => {
  it('safe options are taken and planned: entrypoint split into words (the image command cleared), init, ulimit, cap-drop, user, workdir, hostname, stop timeout, labels, tmpfs, shm size', async () => {
    const opts = `--entrypoint "sh -c 'sleep 36000'" --init --ulimit nofile=512:1024 --cap-drop=ALL -u 1000:1000 -w /srv --hostname web-1 --stop-timeout 20 -l team=shop --tmpfs /run/cache:size=16m --shm-size 64m`;
    const r = await app({ custom_docker_run_options: opts });
    expect(r.status, r.text).toBe(201);
    expect((await c.api('GET', `/applications/${r.json.uuid}`, c.read)).json.custom_docker_run_options).toBe(opts);
    const spec = (await planOf(r.json.uuid)).containers[0]!.spec;
    expect(spec).toMatchObject({
      entrypoint: ['sh', '-c', 'sleep 36000'],
      cmd: [],
      init: true,
      ulimits: [{ name: 'nofile', soft: 512, hard: 1024 }],
      capDrop: ['ALL'],
      user: '1000:1000',
      workingDir: '/srv',
      hostname: 'web-1',
      stopTimeoutS: 20,
      tmpfs: { '/run/cache': 'size=16m' },
      shmSize: 64 * 2 ** 20,
    });
    expect(spec.labels).toMatchObject({ team: 'shop', 'berth.resource': r.json.uuid, 'berth.managed': 'true' });
  });

  it('host-reaching options are refused naming the option, unknown and berth-managed ones too, and nothing is stored', async () => {
    const before = await dump(c.s);
    const refused = async (opts: string, option: string) => {
      const r = await app({ custom_docker_run_options: opts });
      expectValidation(r, ['custom_docker_run_options']);
      expect(r.json.errors.custom_docker_run_options.join(' '), opts).toContain(option);
    };
    await refused('--privileged', '--privileged');
    await refused('--init --cap-add NET_ADMIN', '--cap-add');
    await refused('--device /dev/fuse', '--device');
    await refused('--pid=host', '--pid=host');
    await refused('--network host', '--network=host');
    await refused('--security-opt seccomp=unconfined', '--security-opt');
    await refused('-v /etc:/host-etc', '--volume');
    await refused('-v /:/host', '--volume');
    await refused('-v data:/data', '--volume');
    await refused('--pid container:abc', '--pid');
    await refused('--network=other-net', '--network');
    await refused('--gpus all', '--gpus');
    await refused('-e SECRET=1', '-e');
    await refused('-p 80:80', '-p');
    await refused('--memory 1g', 'limits_memory');
    await refused('--restart always', '--restart');
    await refused('--label berth.resource=other', 'berth.resource');
    await refused('--init && rm -rf /', '&&');
    await refused('nginx', '"nginx" is not an option');
    await refused('--ulimit nofile=2048:1024', '--ulimit');
    expect(await dump(c.s)).toEqual(before);
  });

  it('with host access on the server (root team), the host-reaching ones are taken', async () => {
    const { uuid: server } = (await c.api('POST', '/servers', c.root, { ip: '10.9.1.1', name: 'trusted-run' })).json;
    expect((await c.api('PATCH', `/servers/${server}`, c.root, { host_access: true })).status).toBe(201);
    const r = await c.api('POST', '/applications/dockerimage', c.write, {
      ...placeOf(c.w),
      server_uuid: server,
      docker_registry_image_name: 'nginx',
      custom_docker_run_options: '--cap-add NET_ADMIN --device /dev/fuse',
    });
    expect(r.status, r.text).toBe(201);
    expect((await planOf(r.json.uuid)).containers[0]!.spec).toMatchObject({ capAdd: ['NET_ADMIN'], devices: ['/dev/fuse'] });
    // The same options on the plain server: refused on update as at create.
    const { uuid } = (await app()).json;
    expectValidation(await c.api('PATCH', `/applications/${uuid}`, c.write, { custom_docker_run_options: '--cap-add NET_ADMIN' }), ['custom_docker_run_options']);
  });
});

describe('applications: custom_labels', () => {
  it('base64 as Coolify sends it, or plain text; shown base64; planned under berth’s own labels', async () => {
    const r = await app({ custom_labels: b64('traefik.enable=true\ntraefik.http.routers.web.rule=Host(`shop.example.com`)\n') });
    expect(r.status, r.text).toBe(201);
    const got = (await c.api('GET', `/applications/${r.json.uuid}`, c.read)).json;
    expect(Buffer.from(got.custom_labels, 'base64').toString()).toBe('traefik.enable=true\ntraefik.http.routers.web.rule=Host(`shop.example.com`)');
    expect((await planOf(r.json.uuid)).containers[0]!.spec.labels).toMatchObject({ 'traefik.enable': 'true', 'traefik.http.routers.web.rule': 'Host(`shop.example.com`)' });
    const plain = await c.api('PATCH', `/applications/${r.json.uuid}`, c.write, { custom_labels: 'team=shop' });
    expect(plain.status, plain.text).toBe(200);
    expect((await planOf(r.json.uuid)).containers[0]!.spec.labels).toEqual({ team: 'shop', 'berth.managed': 'true', 'berth.resource': r.json.uuid });
  });

  it('berth.* labels, and lines that are not key=value, are a 422 naming custom_labels', async () => {
    const before = await dump(c.s);
    for (const text of ['berth.resource=someone-else', 'berth.managed=false', 'ok=1\nberth.container=x', 'no equals sign']) {
      for (const body of [b64(text), text]) {
        const r = await app({ custom_labels: body });
        expectValidation(r, ['custom_labels']);
      }
    }
    const r = await app({ custom_labels: b64('berth.resource=x') });
    expect(r.json.errors.custom_labels[0]).toContain('berth.resource');
    expect(await dump(c.s)).toEqual(before);
  });
});

describe('databases: limits', () => {
  it('taken at create and update, shown by GET, planned as HostConfig limits; bad ones a 422 naming the field', async () => {
    const r = await c.api('POST', '/databases/redis', c.write, { ...placeOf(c.w), limits_memory: '512m', limits_cpus: '0.5' });
    expect(r.status, r.text).toBe(201);
    expect((await c.api('PATCH', `/databases/${r.json.uuid}`, c.write, { limits_cpuset: '0', limits_memory_swap: '1g' })).status).toBe(200);
    const got = (await c.api('GET', `/databases/${r.json.uuid}`, c.read)).json;
    expect(got).toMatchObject({ limits_memory: '512m', limits_cpus: '0.5', limits_cpuset: '0', limits_memory_swap: '1g', limits_memory_swappiness: 60, limits_cpu_shares: 1024 });
    expect((await planOf(r.json.uuid)).containers[0]!.spec.limits).toEqual({ memory: 512 * 2 ** 20, memorySwap: 2 ** 30, nanoCpus: 5e8, cpusetCpus: '0' });
    expectValidation(await c.api('PATCH', `/databases/${r.json.uuid}`, c.write, { limits_memory: '2g' }), ['limits_memory_swap']);
    expectValidation(await c.api('POST', '/databases/postgresql', c.write, { ...placeOf(c.w), limits_cpus: 'many' }), ['limits_cpus']);
    // Not an application field on a database.
    expectValidation(await c.api('POST', '/databases/postgresql', c.write, { ...placeOf(c.w), health_check_enabled: true }), ['health_check_enabled']);
  });
});

describe('services: compose runtime keys', () => {
  const service = (yaml: string) => c.api('POST', '/services', c.write, { ...placeOf(c.w), docker_compose_raw: b64(yaml) });

  it('string command and entrypoint split into words; healthcheck, limits, stop_grace_period and depends_on planned; containers after what they depend on', async () => {
    const yaml = [
      'services:',
      '  web:',
      '    image: nginx',
      '    entrypoint: /docker-entrypoint.sh',
      '    command: nginx -g "daemon off;"',
      '    depends_on:',
      '      db: { condition: service_healthy }',
      '      cache: { condition: service_started }',
      '      migrate: { condition: service_completed_successfully }',
      '    healthcheck:',
      '      test: wget -q -O- http://localhost/ || exit 1',
      '      interval: 1m30s',
      '      timeout: 500ms',
      '      retries: 3',
      '      start_period: 10s',
      '    deploy:',
      '      resources:',
      '        limits: { memory: 512M, cpus: "0.5" }',
      '        reservations: { memory: 128m }',
      '    stop_grace_period: 1m',
      '  migrate:',
      '    image: busybox',
      '    command: sleep 36000',
      '    depends_on: [db]',
      '  db:',
      '    image: postgres',
      '    healthcheck:',
      '      test: ["CMD", "pg_isready"]',
      '    mem_limit: 1g',
      '    cpus: 2',
      '  cache:',
      '    image: redis',
      '    healthcheck: { disable: true }',
    ].join('\n');
    const r = await service(yaml);
    expect(r.status, r.text).toBe(201);
    const plan = await planOf(r.json.uuid);
    const name = (s: string) => `${r.json.uuid}-${s}`;
    expect(plan.containers.map((k) => k.name)).toEqual([name('db'), name('cache'), name('migrate'), name('web')]);
    const [db, cache, migrate, web] = plan.containers;
    expect(web!.spec).toMatchObject({
      entrypoint: ['/docker-entrypoint.sh'],
      cmd: ['nginx', '-g', 'daemon off;'],
      healthcheck: { test: ['CMD-SHELL', 'wget -q -O- http://localhost/ || exit 1'], intervalS: 90, timeoutS: 0.5, retries: 3, startPeriodS: 10 },
      limits: { memory: 512 * 2 ** 20, nanoCpus: 5e8, memoryReservation: 128 * 2 ** 20 },
      stopTimeoutS: 60,
    });
    expect(web!.dependsOn).toEqual([
      { name: name('db'), condition: 'service_healthy' },
      { name: name('cache'), condition: 'service_started' },
      { name: name('migrate'), condition: 'service_completed_successfully' },
    ]);
    expect(migrate!.spec.cmd).toEqual(['sleep', '36000']);
    expect(migrate!.dependsOn).toEqual([{ name: name('db'), condition: 'service_started' }]);
    expect(db!.spec).toMatchObject({ healthcheck: { test: ['CMD', 'pg_isready'] }, limits: { memory: 2 ** 30, nanoCpus: 2e9 } });
    expect(db!.dependsOn).toBeUndefined();
    expect(cache!.spec.healthcheck).toEqual({ test: ['NONE'] });
  });

  it('cycles, unknown services, bad conditions, durations, sizes and shell operators are a 422 naming the key', async () => {
    const before = await dump(c.s);
    const refused = async (yaml: string, text: string) => {
      const r = await service(yaml);
      expectValidation(r, ['docker_compose_raw']);
      expect(r.json.errors.docker_compose_raw.join(' '), yaml).toContain(text);
    };
    await refused('services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n', 'cycle (a → b → a)');
    await refused('services:\n  a:\n    image: x\n    depends_on: [a]\n', 'cycle');
    await refused('services:\n  a:\n    image: x\n    depends_on: [nope]\n', '"nope" is not a service');
    await refused('services:\n  a:\n    image: x\n    depends_on: { b: { condition: service_ready } }\n  b:\n    image: x\n', 'condition of "b"');
    await refused('services:\n  a:\n    image: x\n    healthcheck: { test: "true", interval: 10 }\n', 'services.a.healthcheck (line 4): interval must be a duration');
    await refused('services:\n  a:\n    image: x\n    healthcheck: { test: [curl, x] }\n', 'test must be');
    await refused('services:\n  a:\n    image: x\n    mem_limit: 1m\n', 'services.a.mem_limit (line 4)');
    await refused('services:\n  a:\n    image: x\n    cpus: lots\n', 'services.a.cpus');
    await refused('services:\n  a:\n    image: x\n    deploy: { mode: global }\n', 'services.a.deploy');
    await refused('services:\n  a:\n    image: x\n    stop_grace_period: soon\n', 'services.a.stop_grace_period');
    await refused('services:\n  a:\n    image: x\n    command: run && rm -rf /\n', 'services.a.command (line 4): "&&" is a shell operator');
    expect(await dump(c.s)).toEqual(before);
  });
});
