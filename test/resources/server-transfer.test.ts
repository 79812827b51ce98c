/**
 * A server moved between two real berth instances (export, import, claim, transfer/complete,
 * migrate): the bundle carries the server and everything on it, secrets only for read:sensitive,
 * sealed with a passphrase when asked; import recreates it all or nothing, keeps uuids (a second
 * import is a 409) or gives new ones, and the source stops managing a server it handed over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { NOT_FOUND, setup, type Ctx } from './support.js';

let a: Ctx;
let b: TestServer;
let bApi: (method: string, path: string, body?: unknown, token?: string) => ReturnType<typeof call>;
beforeAll(async () => {
  a = await setup({ outboundAllowedTargets: '127.0.0.1' });
  b = await startTestServer({ apiRateLimit: 0 });
  bApi = (method, path, body, token = b.rootToken) => call(b.url, method, `/api/v1${path}`, { token, body });
}, 60_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
});

const exportOf = async (token: string, query = '') => {
  const r = await a.api('GET', `/servers/${a.w.serverUuid}/export${query}`, token);
  expect(r.status, r.text).toBe(200);
  return r.json;
};

describe('export', () => {
  it('carries the server, its destinations, projects and resources with their settings; secrets only with read:sensitive', async () => {
    const full = await exportOf(a.root);
    expect(full).toMatchObject({ format: 'berth-server-transfer', schema_version: 1, includes_secrets: true, server: { uuid: a.w.serverUuid, ip: '10.0.0.1' } });
    const uuids = full.resources.map((r: { uuid: string }) => r.uuid);
    expect(uuids).toEqual(expect.arrayContaining([a.w.appUuid, a.w.databaseUuid, a.w.serviceUuid]));
    const app = full.resources.find((r: { uuid: string }) => r.uuid === a.w.appUuid);
    expect(app.envs).toEqual([expect.objectContaining({ key: 'API_KEY', value: 'app-secret-value' })]);
    expect(app.tags).toEqual(['web']);
    expect(app.storages[0]).toMatchObject({ name: 'data', mount_path: '/data', backups: [expect.objectContaining({ settings: expect.objectContaining({ frequency: 'weekly' }) })] });
    expect(app.scheduled_tasks).toEqual([expect.objectContaining({ name: 'nightly', command: 'echo nightly' })]);
    const db = full.resources.find((r: { uuid: string }) => r.uuid === a.w.databaseUuid);
    expect(JSON.stringify(db.config)).toContain('db-secret-password');
    expect(db.backups[0]).toMatchObject({ frequency: 'yearly' });
    expect(full.private_keys).toEqual([expect.objectContaining({ uuid: a.w.keyUuid, private_key: expect.stringContaining('PRIVATE KEY') })]);
    expect(full.shared_variables).toEqual([expect.objectContaining({ key: 'SERVER_SHARED', value: 'server_shared-secret-value' })]);
    expect(full.projects).toEqual([expect.objectContaining({ uuid: a.w.projectUuid, environments: [expect.objectContaining({ name: 'production' })] })]);

    const redacted = await exportOf(a.read);
    expect(redacted.includes_secrets).toBe(false);
    const text = JSON.stringify(redacted);
    for (const secret of ['app-secret-value', 'db-secret-password', 'PRIVATE KEY', 'server_shared-secret-value', 'echo nightly']) expect(text).not.toContain(secret);
    expect(redacted.resources.map((r: { uuid: string }) => r.uuid).sort()).toEqual([...uuids].sort());
  });

  it("another team's server is a 404; a bad passphrase a 422", async () => {
    const other = await a.s.team('Elsewhere');
    expect((await a.api('GET', `/servers/${a.w.serverUuid}/export`, other.rootToken)).text).toBe(NOT_FOUND);
    expect((await a.api('GET', `/servers/${a.w.serverUuid}/export?passphrase=short`, a.root)).status).toBe(422);
    expect((await a.api('GET', `/servers/${a.w.serverUuid}/export?encrypt=true`, a.root)).status).toBe(422);
  });
});

describe('import on another instance', () => {
  it('a bundle without secrets, a sealed one without or with a wrong passphrase, and a tampered one are 422s; nothing is written', async () => {
    const before = (await bApi('GET', '/servers')).json.length;
    const redacted = await exportOf(a.read);
    const refused = await bApi('POST', '/servers/import', { bundle: redacted });
    expect(refused.json.errors?.bundle?.[0], refused.text).toMatch(/without read:sensitive/);
    const sealed = await exportOf(a.root, '?encrypt=true&passphrase=correct-horse-battery');
    expect(sealed).toMatchObject({ encrypted: true, cipher: 'aes-256-gcm', kdf: { name: 'scrypt' } });
    expect(JSON.stringify(sealed)).not.toContain('app-secret-value');
    expect((await bApi('POST', '/servers/import', { bundle: sealed })).json.errors).toHaveProperty('passphrase');
    const wrong = await bApi('POST', '/servers/import', { bundle: sealed, passphrase: 'wrong-horse-battery' });
    expect(wrong.status).toBe(422);
    expect(wrong.json.errors.bundle[0]).toMatch(/Wrong passphrase/);
    const payload = Buffer.from(sealed.payload, 'base64');
    payload[0] = payload[0]! ^ 1;
    expect((await bApi('POST', '/servers/import', { bundle: { ...sealed, payload: payload.toString('base64') }, passphrase: 'correct-horse-battery' })).status).toBe(422);
    expect((await bApi('POST', '/servers/import', { bundle: { schema_version: 1, server: {} } })).json.errors.bundle[0]).toMatch(/Not a berth server transfer bundle/);
    expect((await bApi('POST', '/servers/import', { bundle: sealed, nope: 1 })).json.errors).toHaveProperty('nope');
    expect((await bApi('POST', '/servers/import', { bundle: sealed, write_remote: true })).json.errors).toHaveProperty('write_remote');
    expect((await bApi('GET', '/servers')).json.length).toBe(before);
  });

  it('needs write', async () => {
    const read = (await b.token({ permissions: ['read:sensitive'] })).token;
    expect((await bApi('POST', '/servers/import', { bundle: {} }, read)).status).toBe(403);
  });

  it('dry run counts and writes nothing; the import keeps uuids, secrets and settings; a second one is a 409; preserve_uuids=false makes new ones', async () => {
    const sealed = await exportOf(a.root, '?passphrase=correct-horse-battery');
    const dry = await bApi('POST', '/servers/import', { bundle: sealed, passphrase: 'correct-horse-battery', dry_run: true });
    expect(dry.status, dry.text).toBe(201);
    expect(dry.json).toMatchObject({ dry_run: true, server_uuid: a.w.serverUuid, created: { resources: 3, destinations: 1, projects: 1 } });
    expect((await bApi('GET', `/servers/${a.w.serverUuid}`)).status).toBe(404);

    const r = await bApi('POST', '/servers/import', { bundle: sealed, passphrase: 'correct-horse-battery' });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({ dry_run: false, claimed: true, preserve_uuids: true, created: { resources: 3, private_keys: 1, shared_variables: 1 } });
    const server = (await bApi('GET', `/servers/${a.w.serverUuid}`)).json;
    expect(server).toMatchObject({ ip: '10.0.0.1', private_key_uuid: a.w.keyUuid, is_usable: false, host_access: false, transfer: { status: 'claimed' } });
    const app = (await bApi('GET', `/applications/${a.w.appUuid}`)).json;
    expect(app).toMatchObject({ uuid: a.w.appUuid, docker_registry_image_name: 'nginx' });
    expect((await bApi('GET', `/applications/${a.w.appUuid}/envs`)).json).toEqual([expect.objectContaining({ key: 'API_KEY', value: 'app-secret-value' })]);
    expect((await bApi('GET', `/databases/${a.w.databaseUuid}`)).json.postgres_password).toBe('db-secret-password');
    expect((await bApi('GET', `/services/${a.w.serviceUuid}`)).status).toBe(200);
    expect((await bApi('GET', `/applications/${a.w.appUuid}/scheduled-tasks`)).json).toEqual([expect.objectContaining({ name: 'nightly' })]);
    expect((await bApi('GET', '/tags')).json.map((t: { name: string }) => t.name)).toContain('web');

    const again = await bApi('POST', '/servers/import', { bundle: sealed, passphrase: 'correct-horse-battery' });
    expect(again.status).toBe(409);
    expect(again.json.message).toMatch(new RegExp(`server ${a.w.serverUuid}.*preserve_uuids=false`));

    const fresh = await bApi('POST', '/servers/import', { bundle: sealed, passphrase: 'correct-horse-battery', preserve_uuids: false });
    expect(fresh.status, fresh.text).toBe(201);
    expect(fresh.json.server_uuid).not.toBe(a.w.serverUuid);
    // The project and the key the team already has are used again, not copied.
    expect(fresh.json.reused).toMatchObject({ projects: 1, private_keys: 1 });
    const apps = (await bApi('GET', '/applications')).json as Array<{ uuid: string; name: string }>;
    const copy = apps.find((x) => x.uuid !== a.w.appUuid && x.name === app.name)!;
    expect(copy).toBeTruthy();
    // The volume keeps its engine name, so the copy's data is the original's.
    const storages = (await bApi('GET', `/applications/${copy.uuid}/storages`)).json.persistent_storages;
    expect(storages[0].volume_name).toBe(`${a.w.appUuid}-data`);
  });

  it('an unclaimed import is not managed until claimed', async () => {
    const bundle = await exportOf(a.root);
    const r = await bApi('POST', '/servers/import', { bundle, preserve_uuids: false, claim: false });
    expect(r.status, r.text).toBe(201);
    const uuid = r.json.server_uuid;
    expect((await bApi('GET', `/servers/${uuid}`)).json.transfer.status).toBe('imported');
    const v = await bApi('POST', `/servers/${uuid}/validate`);
    expect(v.status).toBe(409);
    expect(v.json.message).toMatch(/claim it/);
    const sentinel = await bApi('POST', `/servers/${uuid}/claim`, { rebind_sentinel: true });
    expect(sentinel.json.errors, sentinel.text).toHaveProperty('rebind_sentinel');
    const c = await bApi('POST', `/servers/${uuid}/claim`, {});
    expect(c.status, c.text).toBe(200);
    expect(c.json).toMatchObject({ server_uuid: uuid, claim_written: false, sentinel_rebound: false, claim: { server_uuid: uuid, export_id: bundle.export_id } });
    expect((await bApi('GET', `/servers/${uuid}`)).json.transfer.status).toBe('claimed');
  });
});

describe('the source side', () => {
  it('transfer/complete stops managing the server; claim takes it back', async () => {
    const uuid = a.w.server2Uuid;
    const r = await a.api('POST', `/servers/${uuid}/transfer/complete`, a.write, { target_instance_url: 'https://other.example.test' });
    expect(r.status, r.text).toBe(200);
    const s = (await a.api('GET', `/servers/${uuid}`, a.read)).json;
    expect(s).toMatchObject({ is_usable: false, is_managed: false, transfer: { status: 'transferred', target_instance_url: 'https://other.example.test' } });
    expect((await a.api('POST', `/servers/${uuid}/validate`, a.write)).json.message).toMatch(/transferred to https:\/\/other\.example\.test/);
    expect((await a.api('POST', `/servers/${uuid}/claim`, a.write, {})).status).toBe(200);
    expect((await a.api('GET', `/servers/${uuid}`, a.read)).json.transfer.status).toBe('claimed');
  });

  it('migrate exports, imports on the target and marks the server transferred; it needs read:sensitive and an https or loopback target', async () => {
    const team = await b.team('Movers');
    const src = (await a.api('POST', '/servers', a.root, { name: 'mover', ip: '10.0.0.9' })).json.uuid;
    expect((await a.api('POST', `/servers/${src}/migrate`, a.readWrite, { target_url: b.url, target_token: team.rootToken })).status).toBe(403);
    expect((await a.api('POST', `/servers/${src}/migrate`, a.root, { target_url: 'http://example.test', target_token: team.rootToken })).json.errors).toHaveProperty('target_url');
    const bad = await a.api('POST', `/servers/${src}/migrate`, a.root, { target_url: b.url, target_token: '1|wrong' });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/target answered 401/);
    expect((await a.api('GET', `/servers/${src}`, a.read)).json.transfer).toBeNull();

    const m = await a.api('POST', `/servers/${src}/migrate`, a.root, { target_url: b.url, target_token: team.rootToken });
    expect(m.status, m.text).toBe(200);
    expect(m.json).toMatchObject({ server_uuid: src, target_server_uuid: src, import: { claimed: true } });
    expect((await bApi('GET', `/servers/${src}`, undefined, team.rootToken)).json).toMatchObject({ name: 'mover', transfer: { status: 'claimed' } });
    expect((await a.api('GET', `/servers/${src}`, a.read)).json.transfer).toMatchObject({ status: 'transferred', export_id: m.json.export_id });
  });
});

describe('domains in a bundle', () => {
  it("an import cannot take a domain another team's resource answers to (409 naming none); elsewhere it keeps them", async () => {
    expect((await a.api('PATCH', `/applications/${a.w.appUuid}`, a.write, { domains: 'https://held.example.com' })).status).toBe(200);
    try {
      const bundle = await exportOf(a.root);
      const other = await a.s.team('Domain takers');
      const taken = await call(a.s.url, 'POST', '/api/v1/servers/import', { token: other.rootToken, body: { bundle, preserve_uuids: false } });
      expect(taken.status, taken.text).toBe(409);
      expect(taken.json.message).toBe('Domain conflicts detected: held.example.com is used by another resource.');
      // All or nothing: the other team has no server from it.
      expect((await a.api('GET', '/servers', other.rootToken)).json).toEqual([]);
      const fresh = await startTestServer({ apiRateLimit: 0 });
      try {
        const r = await call(fresh.url, 'POST', '/api/v1/servers/import', { token: fresh.rootToken, body: { bundle } });
        expect(r.status, r.text).toBe(201);
        expect((await call(fresh.url, 'GET', `/api/v1/applications/${a.w.appUuid}`, { token: fresh.rootToken })).json.fqdn).toBe('https://held.example.com');
      } finally {
        await fresh.stop();
      }
    } finally {
      await a.api('PATCH', `/applications/${a.w.appUuid}`, a.write, { domains: null });
    }
  });
});

describe('swarm and additional destinations in a bundle', () => {
  const placement = Buffer.from('placement:\n  constraints:\n    - node.role == worker').toString('base64');
  it("a swarm manager's flags, its destinations' types, an application's swarm fields and the copies on other servers survive export → import; refusals are 422s naming the path", async () => {
    // Arrangement: validate is what makes a server a manager, and these servers have no engine.
    await a.s.db.updateTable('servers').set({ is_swarm_manager: 1 }).where('uuid', '=', a.w.serverUuid).execute();
    const swarmDest = (await a.api('POST', `/servers/${a.w.serverUuid}/destinations`, a.root, { network: 'berth-swarm', type: 'swarm' })).json;
    expect(swarmDest).toMatchObject({ type: 'swarm' });
    const place = { project_uuid: a.w.projectUuid, environment_name: 'production', docker_registry_image_name: 'nginx', ports_exposes: '80' };
    const created = await a.api('POST', '/applications/dockerimage', a.root, {
      ...place,
      server_uuid: a.w.serverUuid,
      destination_uuid: swarmDest.uuid,
      name: 'replicated',
      swarm_replicas: 3,
      swarm_placement_constraints: placement,
    });
    expect(created.status, created.text).toBe(201);
    const swarmApp = created.json.uuid as string;
    // It also runs on the second server; an application of the second server also runs on this one.
    expect((await a.api('POST', `/applications/${swarmApp}/destinations`, a.root, { destination_uuid: a.w.destination2Uuid })).status).toBe(201);
    const other = (await a.api('POST', '/applications/dockerimage', a.root, { ...place, server_uuid: a.w.server2Uuid, name: 'elsewhere' })).json.uuid as string;
    expect((await a.api('POST', `/applications/${other}/destinations`, a.root, { destination_uuid: a.w.destinationUuid })).status).toBe(201);

    const one = await exportOf(a.root);
    expect(one.server).toMatchObject({ is_swarm_manager: true, is_swarm_worker: false });
    expect(one.destinations.map((d: { uuid: string; type: string }) => [d.uuid, d.type])).toEqual([
      [a.w.destinationUuid, 'standalone'],
      [swarmDest.uuid, 'swarm'],
    ]);
    const exported = one.resources.find((r: { uuid: string }) => r.uuid === swarmApp);
    expect(exported.config).toMatchObject({ swarm_replicas: 3, swarm_placement_constraints: 'placement:\n  constraints:\n    - node.role == worker' });
    expect(exported.additional_destinations).toEqual([{ destination_uuid: a.w.destination2Uuid, server_uuid: a.w.server2Uuid }]);
    expect(one.copies).toEqual([{ application_uuid: other, destination_uuid: a.w.destinationUuid }]);

    const c = await startTestServer({ apiRateLimit: 0 });
    try {
      const cApi = (method: string, path: string, body?: unknown) => call(c.url, method, `/api/v1${path}`, { token: c.rootToken, body });
      // Refused by path, nothing written: an unknown type, a database on a swarm destination, swarm fields out of range.
      const withType = structuredClone(one);
      withType.destinations[1].type = 'kubernetes';
      const badType = await cApi('POST', '/servers/import', { bundle: withType });
      expect(badType.status, badType.text).toBe(422);
      expect(badType.json).toMatchObject({ message: expect.any(String), errors: { 'bundle.destinations.1.type': ['A destination type: standalone or swarm.'] } });
      const dbOnSwarm = structuredClone(one);
      const dbIndex = dbOnSwarm.resources.findIndex((r: { uuid: string }) => r.uuid === a.w.databaseUuid);
      dbOnSwarm.resources[dbIndex].destination_uuid = swarmDest.uuid;
      const appIndex = dbOnSwarm.resources.findIndex((r: { uuid: string }) => r.uuid === swarmApp);
      dbOnSwarm.resources[appIndex].config.swarm_replicas = 101;
      dbOnSwarm.resources[appIndex].config.swarm_placement_constraints = 'replicas: 2';
      const refused = await cApi('POST', '/servers/import', { bundle: dbOnSwarm });
      expect(refused.status, refused.text).toBe(422);
      expect(refused.json.errors[`bundle.resources.${dbIndex}.destination_uuid`][0]).toMatch(/^Databases do not run on a swarm destination/);
      expect(refused.json.errors[`bundle.resources.${appIndex}.config.swarm_replicas`]).toEqual(['A whole number from 0 to 100.']);
      expect(refused.json.errors[`bundle.resources.${appIndex}.config.swarm_placement_constraints`][0]).toMatch(/Only placement:/);
      expect((await cApi('GET', '/servers')).json).toEqual([]);

      // The first server: its copies' other ends are not here yet, and the answer says so.
      const first = await cApi('POST', '/servers/import', { bundle: one });
      expect(first.status, first.text).toBe(201);
      expect(first.json.created).toMatchObject({ destinations: 2, additional_destinations: 0 });
      expect(first.json.warnings.join('\n')).toContain(`replicated also ran on destination ${a.w.destination2Uuid} of server ${a.w.server2Uuid}`);
      expect(first.json.warnings.join('\n')).toContain(`Application ${other} of another server also ran on destination ${a.w.destinationUuid} here`);
      expect((await cApi('GET', `/servers/${a.w.serverUuid}`)).json).toMatchObject({ is_swarm_manager: true, is_swarm_worker: false });
      expect((await cApi('GET', `/servers/${a.w.serverUuid}/destinations`)).json.map((d: { uuid: string; type: string }) => [d.uuid, d.type])).toEqual([
        [a.w.destinationUuid, 'standalone'],
        [swarmDest.uuid, 'swarm'],
      ]);
      expect((await cApi('GET', `/applications/${swarmApp}`)).json).toMatchObject({ destination_uuid: swarmDest.uuid, swarm_replicas: 3, swarm_placement_constraints: placement });

      // The second server: both copies are attached again, one from each side.
      const two = (await a.api('GET', `/servers/${a.w.server2Uuid}/export`, a.root)).json;
      expect(two.copies).toEqual([{ application_uuid: swarmApp, destination_uuid: a.w.destination2Uuid }]);
      const second = await cApi('POST', '/servers/import', { bundle: two });
      expect(second.status, second.text).toBe(201);
      expect(second.json).toMatchObject({ created: { additional_destinations: 2 }, warnings: [expect.stringMatching(/^Host access/)] });
      const copiesOf = async (uuid: string) =>
        (await cApi('GET', `/applications/${uuid}/destinations`)).json.map((d: { uuid: string; is_primary: boolean; server_uuid: string }) => [d.uuid, d.is_primary, d.server_uuid]);
      expect(await copiesOf(swarmApp)).toEqual([
        [swarmDest.uuid, true, a.w.serverUuid],
        [a.w.destination2Uuid, false, a.w.server2Uuid],
      ]);
      expect(await copiesOf(other)).toEqual([
        [a.w.destination2Uuid, true, a.w.server2Uuid],
        [a.w.destinationUuid, false, a.w.serverUuid],
      ]);
    } finally {
      await c.stop();
    }
  }, 60_000);
});
