import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_KEY } from '../helpers/world.js';
import { dump, expectValidation, NOT_FOUND, placeOf, setup, totals, type Ctx } from './support.js';

/** Fresh ed25519 keys (fingerprints are unique per team). */
const newKey = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const KEY_2 = newKey();
const KEY_3 = newKey();

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

describe('platform', () => {
  it('GET /version is text/plain', async () => {
    const r = await c.api('GET', '/version', c.read);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    expect(r.text).toMatch(/^\d+\.\d+\.\d+(-[a-z]+\.\d+)?$/); // Coolify's form, e.g. 4.3.11 or 4.0.0-beta.429
  });

  it('GET /resources lists applications, databases and services with their type', async () => {
    const r = await c.api('GET', '/resources', c.read);
    expect(r.status).toBe(200);
    expect(Array.isArray(r.json)).toBe(true);
    expect(r.headers['x-total-count']).toBe(String(r.json.length));
    const byUuid = Object.fromEntries(r.json.map((x: { uuid: string; type: string }) => [x.uuid, x.type]));
    expect(byUuid[c.w.appUuid]).toBe('application');
    expect(byUuid[c.w.databaseUuid]).toBe('standalone-postgresql');
    expect(byUuid[c.w.serviceUuid]).toBe('service');
    for (const x of r.json) expect(x).toMatchObject({ status: expect.any(String), server_uuid: expect.any(String), destination_uuid: expect.any(String), project_uuid: c.w.projectUuid });
  });
});

describe('private keys', () => {
  it('create → 201 {uuid}; get shows the public half; list never carries the key', async () => {
    const created = await c.api('POST', '/security/keys', c.write, { name: 'deploy-key', description: 'for CI', private_key: KEY_2 });
    expect(created.status).toBe(201);
    expect(Object.keys(created.json)).toEqual(['uuid']);
    const uuid = created.json.uuid as string;
    expect(uuid).toMatch(/^[a-z0-9]{24}$/);

    const got = await c.api('GET', `/security/keys/${uuid}`, c.root);
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({ uuid, name: 'deploy-key', description: 'for CI', private_key: KEY_2, fingerprint: expect.stringMatching(/^SHA256:/) });
    expect(got.json.public_key).toMatch(/^ssh-ed25519 AAAA[A-Za-z0-9+/]+=*$/);

    for (const token of [c.root, c.sensitive, c.read]) {
      const list = await c.api('GET', '/security/keys', token);
      expect(list.status).toBe(200);
      expect(list.json.map((k: { uuid: string }) => k.uuid)).toContain(uuid);
      for (const k of list.json) expect(k).not.toHaveProperty('private_key');
      expect(list.text).not.toContain('PRIVATE KEY');
    }
  });

  it('patch → 201 {uuid}; a duplicate key (same fingerprint) and a non-key are 422', async () => {
    const { uuid } = (await c.api('POST', '/security/keys', c.write, { private_key: KEY_3 })).json;
    const p = await c.api('PATCH', `/security/keys/${uuid}`, c.write, { name: 'renamed' });
    expect(p.status).toBe(201);
    expect(p.json).toEqual({ uuid });
    expect((await c.api('GET', `/security/keys/${uuid}`, c.read)).json.name).toBe('renamed');

    const before = await dump(c.s);
    expectValidation(await c.api('POST', '/security/keys', c.write, { private_key: TEST_KEY }), ['private_key']);
    expectValidation(await c.api('PATCH', `/security/keys/${uuid}`, c.write, { private_key: TEST_KEY }), ['private_key']);
    expectValidation(await c.api('POST', '/security/keys', c.write, { private_key: 'ssh-ed25519 AAAA not a private key' }), ['private_key']);
    expectValidation(await c.api('POST', '/security/keys', c.write, { private_key: '-----BEGIN PRIVATE KEY-----\nnot base64 at all\n-----END PRIVATE KEY-----\n' }), ['private_key']);
    expect(await dump(c.s)).toEqual(before);

    const del = await c.api('DELETE', `/security/keys/${uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Private Key deleted.' });
    expect((await c.api('GET', `/security/keys/${uuid}`, c.read)).text).toBe(NOT_FOUND);
  });

  it('a key in use by a server cannot be deleted (409), and stays', async () => {
    const r = await c.api('DELETE', `/security/keys/${c.w.keyUuid}`, c.write);
    expect(r.status).toBe(409);
    expect(r.json).toEqual({ message: 'Private Key is in use and cannot be deleted.' });
    expect((await c.api('GET', `/security/keys/${c.w.keyUuid}`, c.read)).status).toBe(200);
  });
});

describe('servers', () => {
  it('docker cleanup settings: Coolify defaults, PATCH by cron or word, a bad schedule or value is 422 and changes nothing', async () => {
    const path = `/servers/${c.w.serverUuid}/docker-cleanup`;
    expect((await c.api('GET', path, c.read)).json).toEqual({
      docker_cleanup_frequency: '0 0 * * *',
      docker_cleanup_threshold: 80,
      force_docker_cleanup: false,
      delete_unused_volumes: false,
      delete_unused_networks: false,
      disable_application_image_retention: false,
    });
    const p = await c.api('PATCH', path, c.write, { docker_cleanup_frequency: 'hourly', delete_unused_networks: true });
    expect(p.status).toBe(200);
    expect(p.json).toMatchObject({ docker_cleanup_frequency: 'hourly', delete_unused_networks: true });
    for (const body of [{ docker_cleanup_frequency: 'every now and then' }, { docker_cleanup_frequency: '*/5 * * * * *' }, { docker_cleanup_threshold: 100 }, { sweep: true }]) {
      expect((await c.api('PATCH', path, c.write, body)).status, JSON.stringify(body)).toBe(422);
    }
    expect((await c.api('GET', path, c.read)).json).toMatchObject({ docker_cleanup_frequency: 'hourly', docker_cleanup_threshold: 80 });
    expect((await c.api('PATCH', path, c.read, { delete_unused_volumes: true })).status).toBe(403);
    const other = await c.s.team('cleanup-neighbour');
    for (const [m, p2] of [
      ['GET', path],
      ['PATCH', path],
      ['POST', `${path}/run`],
      ['GET', `${path}/executions`],
    ] as const) {
      const r = await c.api(m, p2, other.rootToken, m === 'GET' ? undefined : {});
      expect(r.status, `${m} ${p2}`).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
  });

  it('docker cleanup on a server berth cannot reach: recorded as failed, with the reason', async () => {
    const run = await c.api('POST', `/servers/${c.w.serverUuid}/docker-cleanup/run`, c.write);
    expect(run.status).toBe(200);
    expect(run.json.message).toMatch(/cleanup job started/);
    const execs = async () => (await c.api('GET', `/servers/${c.w.serverUuid}/docker-cleanup/executions`, c.read)).json;
    for (let i = 0; i < 50 && (await execs())[0]?.status === 'running'; i++) await new Promise((r) => setTimeout(r, 50));
    const [latest] = await execs();
    expect(latest).toMatchObject({ uuid: run.json.execution_uuid, status: 'failed', message: expect.stringContaining('no engine berth can reach'), finished_at: expect.any(String) });
  });

  it('GET /servers/{uuid}/domains: each application with domains, as bare host names with the server address', async () => {
    const place = { project_uuid: c.w.projectUuid, server_uuid: c.w.serverUuid, environment_name: 'production' };
    const app = await c.api('POST', '/applications/dockerimage', c.root, { ...place, docker_registry_image_name: 'nginx', domains: 'https://shop.example.test:8443/x,http://www.shop.example.test' });
    expect(app.status).toBe(201);
    const r = await c.api('GET', `/servers/${c.w.serverUuid}/domains`, c.read);
    expect(r.status).toBe(200);
    expect(r.json).toContainEqual({ ip: '10.0.0.1', domain: ['shop.example.test', 'www.shop.example.test'] });
    // Applications without domains are not listed; another server has none of them.
    expect(r.json.every((d: { domain: string[] }) => d.domain.length > 0)).toBe(true);
    expect((await c.api('GET', `/servers/${c.w.server2Uuid}/domains`, c.read)).json).toEqual([]);
    const other = await c.s.team('domains-neighbour');
    const foreign = await c.api('GET', `/servers/${c.w.serverUuid}/domains`, other.rootToken);
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(NOT_FOUND);
  });

  it('create → 201 {uuid}, with Coolify defaults, a default destination, and berth’s engine fields', async () => {
    const r = await c.api('POST', '/servers', c.write, { name: 'edge-1', ip: 'edge-1.example.com', private_key_uuid: c.w.keyUuid, engine_endpoint: 'tcp://10.1.2.3:2376' });
    expect(r.status).toBe(201);
    expect(Object.keys(r.json)).toEqual(['uuid']);
    const uuid = r.json.uuid as string;
    const got = await c.api('GET', `/servers/${uuid}`, c.read);
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({
      uuid,
      name: 'edge-1',
      ip: 'edge-1.example.com',
      port: 22,
      user: 'root',
      private_key_uuid: c.w.keyUuid,
      engine_endpoint: 'tcp://10.1.2.3:2376',
      is_reachable: false,
      is_usable: false,
      is_managed: false,
    });
    expect(got.json).not.toHaveProperty('id');

    const dests = await c.api('GET', `/servers/${uuid}/destinations`, c.read);
    expect(dests.status).toBe(200);
    expect(dests.headers['x-total-count']).toBe('1');
    expect(dests.json).toHaveLength(1);
    expect(dests.json[0]).toMatchObject({ type: 'standalone', server_uuid: uuid, network: expect.any(String), uuid: expect.stringMatching(/^[a-z0-9]{24}$/) });

    const list = await c.api('GET', '/servers', c.read);
    expect(list.json.map((x: { uuid: string }) => x.uuid)).toContain(uuid);
  });

  it('PATCH /servers/{uuid} → 201 {uuid}; a new engine endpoint clears validation', async () => {
    const { uuid } = (await c.api('POST', '/servers', c.write, { ip: '10.9.9.9' })).json;
    await c.s.db.updateTable('servers').set({ is_reachable: 1, is_usable: 1, engine_endpoint: 'unix:///run/a.sock' }).where('uuid', '=', uuid).execute();
    expect((await c.api('GET', `/servers/${uuid}`, c.read)).json.is_managed).toBe(true);
    const p = await c.api('PATCH', `/servers/${uuid}`, c.write, { name: 'renamed', port: 2222, user: 'deploy', engine_endpoint: 'unix:///run/b.sock' });
    expect(p.status).toBe(201);
    expect(p.json).toEqual({ uuid });
    const got = (await c.api('GET', `/servers/${uuid}`, c.read)).json;
    expect(got).toMatchObject({ name: 'renamed', port: 2222, user: 'deploy', engine_endpoint: 'unix:///run/b.sock', is_reachable: false, is_managed: false });
    const del = await c.api('DELETE', `/servers/${uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Server deleted.' });
    expect((await c.api('GET', `/servers/${uuid}`, c.read)).text).toBe(NOT_FOUND);
  });

  it('validate → 201; an unreachable or record-only engine is not marked managed', async () => {
    const { uuid } = (await c.api('POST', '/servers', c.write, { ip: '10.9.9.10', engine_endpoint: 'unix:///nonexistent/berth-test.sock' })).json;
    const v = await c.api('POST', `/servers/${uuid}/validate`, c.write);
    expect(v.status).toBe(201);
    expect(v.json).toMatchObject({ message: expect.any(String), is_reachable: false, is_usable: false, validation_logs: expect.any(String) });
    const got = (await c.api('GET', `/servers/${uuid}`, c.read)).json;
    expect(got).toMatchObject({ is_reachable: false, is_managed: false, validation_logs: expect.any(String) });
  });

  it('engine_tls is sensitive: absent for read, present for read:sensitive and root', async () => {
    const pem = (label: string, body: string) => `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
    const tls = { ca: pem('CERTIFICATE', 'Q0FTRUNSRVRjYQ=='), cert: pem('CERTIFICATE', 'Q0VSVFNFQ1JFVA=='), key: pem('PRIVATE KEY', 'VExTS0VZU0VDUkVUdGxz') };
    const { uuid } = (await c.api('POST', '/servers', c.write, { ip: '10.9.9.11', engine_endpoint: 'tcp://10.9.9.11:2376', engine_tls: tls })).json;
    for (const [path, pick] of [
      [`/servers/${uuid}`, (j: any) => j],
      ['/servers', (j: any) => j.find((x: { uuid: string }) => x.uuid === uuid)],
    ] as const) {
      const r = await c.api('GET', path, c.read);
      expect(pick(r.json)).not.toHaveProperty('engine_tls');
      expect(r.text).not.toContain('VExTS0VZU0VDUkVUdGxz');
      for (const t of [c.sensitive, c.root]) expect(pick((await c.api('GET', path, t)).json).engine_tls).toEqual(tls);
    }
  });

  it('lists the resources on a server with their type', async () => {
    const r = await c.api('GET', `/servers/${c.w.serverUuid}/resources`, c.read);
    expect(r.status).toBe(200);
    const types = Object.fromEntries(r.json.map((x: { uuid: string; type: string }) => [x.uuid, x.type]));
    expect(types[c.w.appUuid]).toBe('application');
    expect(types[c.w.serviceUuid]).toBe('service');
    expect(types[c.w.databaseUuid]).toBe('postgresql');
    expect(r.headers['x-total-count']).toBe(String(r.json.length));
  });

  it('a server with resources is not deleted (409), nor is anything on it', async () => {
    const before = await dump(c.s);
    const r = await c.api('DELETE', `/servers/${c.w.serverUuid}`, c.write);
    expect(r.status).toBe(409);
    expect(r.json.message).toMatch(/resources/i);
    expect(await dump(c.s)).toEqual(before);
  });

  it('rejects injected fields and nothing is stored', async () => {
    const before = await dump(c.s);
    const counts = await totals(c);
    const bad: [Record<string, unknown>, string[]][] = [
      [{ ip: '10.0.0.5', name: 'main;id' }, ['name']],
      [{ ip: '10.0.0.5', name: '$(id)' }, ['name']],
      [{ ip: '10.0.0.5', name: '../x' }, ['name']],
      [{ ip: '10.0.0.5;id' }, ['ip']],
      [{ ip: '$(id).example.com' }, ['ip']],
      [{ ip: '10.0.0.5', user: 'root;id' }, ['user']],
      [{ ip: '10.0.0.5', port: 0 }, ['port']],
      [{ ip: '10.0.0.5', port: '22;id' }, ['port']],
      [{ ip: '10.0.0.5', engine_endpoint: 'unix://relative.sock' }, ['engine_endpoint']],
      [{ ip: '10.0.0.5', engine_endpoint: 'unix:///run/../etc/shadow' }, ['engine_endpoint']],
      [{ ip: '10.0.0.5', engine_endpoint: 'tcp://host' }, ['engine_endpoint']],
      [{ ip: '10.0.0.5', engine_endpoint: 'tcp://host:99999' }, ['engine_endpoint']],
      [{ ip: '10.0.0.5', engine_endpoint: 'http://host:2375' }, ['engine_endpoint']],
      [{ ip: '10.0.0.5', engine_tls: { ca: 'x', cert: 'y', key: 'z' } }, ['engine_tls.ca', 'engine_tls.cert', 'engine_tls.key']],
      [{ ip: '10.0.0.5', uuid: 'abc', team_id: 1, id: 7, is_reachable: true }, ['uuid', 'team_id', 'id', 'is_reachable']],
      [{ name: 'no-ip' }, ['ip']],
    ];
    for (const [body, fields] of bad) expectValidation(await c.api('POST', '/servers', c.write, body), fields);
    // Patches too, and the path's uuid may not be repeated in the body.
    expectValidation(await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.write, { engine_endpoint: 'tcp://host' }), ['engine_endpoint']);
    expectValidation(await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.write, { uuid: 'other' }), ['uuid']);
    expectValidation(await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.write, { team_id: 99, id: 1 }), ['team_id', 'id']);
    expect(await dump(c.s)).toEqual(before);
    expect(await totals(c)).toEqual(counts);
  });

  it('another team’s private key is refused like a missing one, and no server is created', async () => {
    const other = await c.s.team('Key Owners');
    const { uuid: foreignKey } = (await c.api('POST', '/security/keys', other.rootToken, { private_key: KEY_2 })).json;
    const before = await dump(c.s);
    for (const k of [foreignKey, 'doesnotexist0000000000000']) {
      const r = await c.api('POST', '/servers', c.write, { ip: '10.0.0.6', private_key_uuid: k });
      expect(r.status).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    expect(await dump(c.s)).toEqual(before);
  });
});

describe('destinations', () => {
  it('create on a server → 201 destination; duplicate network → 409; rename; delete', async () => {
    const { uuid: server } = (await c.api('POST', '/servers', c.write, { ip: '10.2.0.1', name: 'dest-host' })).json;
    const r = await c.api('POST', `/servers/${server}/destinations`, c.write, { network: 'apps-net' });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ uuid: expect.stringMatching(/^[a-z0-9]{24}$/), name: 'dest-host-apps-net', network: 'apps-net', type: 'standalone', server_uuid: server });
    const dup = await c.api('POST', `/servers/${server}/destinations`, c.write, { network: 'apps-net', name: 'again' });
    expect(dup.status).toBe(409);
    expect(dup.json).toEqual({ message: 'A destination with this network already exists on the server.' });

    const all = await c.api('GET', '/destinations', c.read);
    expect(all.json.map((d: { uuid: string }) => d.uuid)).toEqual(expect.arrayContaining([r.json.uuid, c.w.destinationUuid, c.w.destination2Uuid]));
    expect((await c.api('GET', `/servers/${server}/destinations`, c.read)).headers['x-total-count']).toBe('2');

    const got = await c.api('GET', `/destinations/${r.json.uuid}`, c.read);
    expect(got.json).toEqual(r.json);
    const p = await c.api('PATCH', `/destinations/${r.json.uuid}`, c.write, { name: 'apps' });
    expect(p.status).toBe(200);
    expect(p.json).toMatchObject({ uuid: r.json.uuid, name: 'apps', network: 'apps-net' });
    const del = await c.api('DELETE', `/destinations/${r.json.uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Deleted.' });
    expect((await c.api('GET', `/destinations/${r.json.uuid}`, c.read)).text).toBe(NOT_FOUND);
  });

  it('a destination with resources is not deleted (409)', async () => {
    const before = await dump(c.s);
    const r = await c.api('DELETE', `/destinations/${c.w.destinationUuid}`, c.write);
    expect(r.status).toBe(409);
    expect(r.json).toEqual({ message: 'Destination has attached resources, detach first.' });
    expect(await dump(c.s)).toEqual(before);
  });

  it('network names and fields are validated', async () => {
    const before = await dump(c.s);
    for (const network of ['net;id', '$(id)', '../x', '-lead', 'a b', '']) {
      expectValidation(await c.api('POST', `/servers/${c.w.serverUuid}/destinations`, c.write, { network }), ['network']);
    }
    expectValidation(await c.api('POST', `/servers/${c.w.serverUuid}/destinations`, c.write, { network: 'ok', server_id: 1 }), ['server_id']);
    expectValidation(await c.api('PATCH', `/destinations/${c.w.destinationUuid}`, c.write, { name: 'x;rm -rf /' }), ['name']);
    expectValidation(await c.api('PATCH', `/destinations/${c.w.destinationUuid}`, c.write, { network: 'other' }), ['name', 'network']);
    expect(await dump(c.s)).toEqual(before);
  });
});

describe('projects and environments', () => {
  it('a project starts with production; create/get/patch/delete in Coolify’s shapes', async () => {
    const r = await c.api('POST', '/projects', c.write, { name: 'Shop', description: 'the web shop' });
    expect(r.status).toBe(201);
    expect(Object.keys(r.json)).toEqual(['uuid']);
    const uuid = r.json.uuid as string;

    const got = await c.api('GET', `/projects/${uuid}`, c.read);
    expect(got.json).toMatchObject({ uuid, name: 'Shop', description: 'the web shop' });
    expect(got.json.environments.map((e: { name: string }) => e.name)).toEqual(['production']);
    const envs = await c.api('GET', `/projects/${uuid}/environments`, c.read);
    expect(envs.json.map((e: { name: string }) => e.name)).toEqual(['production']);
    expect(envs.headers['x-total-count']).toBe('1');

    const e = await c.api('POST', `/projects/${uuid}/environments`, c.write, { name: 'staging' });
    expect(e.status).toBe(201);
    expect(Object.keys(e.json)).toEqual(['uuid']);
    const dup = await c.api('POST', `/projects/${uuid}/environments`, c.write, { name: 'staging' });
    expect(dup.status).toBe(409);
    expect(dup.json).toEqual({ message: 'Environment with this name already exists.' });
    const dupProd = await c.api('POST', `/projects/${uuid}/environments`, c.write, { name: 'production' });
    expect(dupProd.status).toBe(409);
    expect((await c.api('GET', `/projects/${uuid}/environments`, c.read)).json.map((x: { name: string }) => x.name)).toEqual(['production', 'staging']);

    const p = await c.api('PATCH', `/projects/${uuid}`, c.write, { name: 'Shop 2' });
    expect(p.status).toBe(201);
    expect(p.json).toEqual({ uuid, name: 'Shop 2', description: 'the web shop' });

    // An app in the new environment (by uuid) lands there.
    const app = await c.api('POST', '/applications/dockerimage', c.write, {
      project_uuid: uuid,
      server_uuid: c.w.serverUuid,
      environment_uuid: e.json.uuid,
      docker_registry_image_name: 'nginx',
    });
    expect(app.status).toBe(201);
    expect((await c.api('GET', `/applications/${app.json.uuid}`, c.read)).json.environment_uuid).toBe(e.json.uuid);

    const before = await dump(c.s);
    const refused = await c.api('DELETE', `/projects/${uuid}`, c.write);
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ message: 'Project has resources, so it cannot be deleted.' });
    expect(await dump(c.s)).toEqual(before);

    expect((await c.api('DELETE', `/applications/${app.json.uuid}`, c.write)).status).toBe(200);
    const del = await c.api('DELETE', `/projects/${uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Project deleted.' });
    expect((await c.api('GET', `/projects/${uuid}`, c.read)).text).toBe(NOT_FOUND);
  });

  it('project and environment names are validated; nothing stored', async () => {
    const before = await dump(c.s);
    for (const name of ['main;id', '$(id)', '../x', '`id`', 'a|b', '']) {
      expectValidation(await c.api('POST', '/projects', c.write, { name }), ['name']);
      expectValidation(await c.api('POST', `/projects/${c.w.projectUuid}/environments`, c.write, { name }), ['name']);
    }
    expectValidation(await c.api('POST', '/projects', c.write, { name: 'ok', team_id: 2, uuid: 'x' }), ['team_id', 'uuid']);
    expectValidation(await c.api('POST', '/projects', c.write, {}), ['name']);
    expect(await dump(c.s)).toEqual(before);
  });

  it('an unknown environment or project in a create body is a 404 and creates nothing', async () => {
    const before = await dump(c.s);
    const base = { ...placeOf(c.w), docker_registry_image_name: 'nginx' };
    for (const body of [
      { ...base, environment_name: 'nope' },
      { ...base, environment_name: undefined, environment_uuid: 'doesnotexist0000000000000' },
      { ...base, project_uuid: 'doesnotexist0000000000000' },
      { ...base, server_uuid: 'doesnotexist0000000000000' },
    ]) {
      const r = await c.api('POST', '/applications/dockerimage', c.write, body);
      expect(r.status, JSON.stringify(body)).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    expectValidation(await c.api('POST', '/applications/dockerimage', c.write, { ...base, environment_name: undefined }), ['environment_name']);
    expect(await dump(c.s)).toEqual(before);
  });
});
