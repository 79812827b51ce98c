/**
 * No team reaches the berth host, and no container reaches into a host that does not allow it.
 * A tenant (a team that is not the instance's root team) with write and even root tokens tries
 * every way in that used to work: the host's own engine socket, its loopback engine ports, cloud
 * metadata addresses, and compose settings that reach into the host. Each is a 422 naming the
 * field (and the compose key and line), nothing is stored, and records made before these rules
 * are refused at connect time.
 */
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyHost, TEAM_REFUSAL } from '../../src/core/network-guard.js';
import { buildWorld, freshKey, type World } from '../helpers/world.js';
import { b64, dump, expectValidation, finished, setup, type Ctx } from './support.js';

let c: Ctx;
let tenant: { id: number; rootToken: string; write: string; w: World };

beforeAll(async () => {
  c = await setup();
  const t = await c.s.team('Tenant');
  const w = await buildWorld(c.s, t.rootToken, 'tenant');
  tenant = { id: t.id, rootToken: t.rootToken, write: (await c.s.token({ permissions: ['write', 'read'], team: t.id })).token, w };
});
afterAll(() => c.stop());

const compose = (service: string) => b64(`services:\n  app:\n    image: nginx:1.27\n${service}`);

describe('engine endpoints and SSH hosts', () => {
  it('a tenant may not use the berth host’s engine: unix sockets and loopback engine ports are 422, nothing stored', async () => {
    const before = await dump(c.s);
    for (const token of [tenant.write, tenant.rootToken]) {
      for (const engine_endpoint of [
        'unix:///var/run/docker.sock',
        'unix:///run/podman/podman.sock',
        'tcp://127.0.0.1:2375',
        'tcp://localhost:2375',
        'tcp://[::1]:2375',
        'tcp://0.0.0.0:2375',
        'tcp://127.1:2375',
        'tcp://[::ffff:127.0.0.1]:2375',
      ]) {
        const r = await c.api('POST', '/servers', token, { ip: '203.0.113.7', engine_endpoint });
        expectValidation(r, ['engine_endpoint']);
        expect(r.json.errors.engine_endpoint[0], engine_endpoint).toMatch(/root team/);
        expectValidation(await c.api('PATCH', `/servers/${tenant.w.server2Uuid}`, token, { engine_endpoint }), ['engine_endpoint']);
      }
    }
    expect(await dump(c.s)).toEqual(before);
  });

  it('the root team may use the host’s engine and SSH to it; a tenant may not SSH to the host either', async () => {
    const root = await c.api('POST', '/servers', c.write, { ip: '127.0.0.1', engine_endpoint: 'unix:///var/run/docker.sock' });
    expect(root.status, root.text).toBe(201);
    const rootSsh = await c.api('POST', '/servers', c.write, { ip: '127.0.0.1', private_key_uuid: c.w.keyUuid });
    expect(rootSsh.status, rootSsh.text).toBe(201);
    const before = await dump(c.s);
    for (const body of [
      { ip: '127.0.0.1', private_key_uuid: tenant.w.keyUuid },
      { ip: 'localhost', port: 2222, private_key_uuid: tenant.w.keyUuid },
      { ip: '::1', private_key_uuid: tenant.w.keyUuid },
    ]) {
      const r = await c.api('POST', '/servers', tenant.write, body);
      expectValidation(r, ['ip']);
      expect(r.json.errors.ip).toEqual([TEAM_REFUSAL]);
    }
    expectValidation(await c.api('POST', '/servers', tenant.write, { ip: '10.0.0.9', private_key_uuid: tenant.w.keyUuid, engine_endpoint: 'ssh://root@127.0.0.1:22/var/run/docker.sock' }), [
      'engine_endpoint',
    ]);
    expectValidation(await c.api('PATCH', `/servers/${tenant.w.serverUuid}`, tenant.write, { ip: '127.0.0.1' }), ['ip']);
    expect(await dump(c.s)).toEqual(before);
  });

  it('every address of the berth host’s own interfaces is the host: a tenant gets the one answer for any port, engine or SSH; the root team may', async () => {
    // The machine's own non-loopback addresses (read like the guard reads them); loopback when it has none.
    const own = Object.values(os.networkInterfaces())
      .flatMap((l) => l ?? [])
      .filter((a) => classifyHost(a.address) === 'host')
      .map((a) => a.address);
    if (process.env.CI) expect(own.length, 'this machine has no non-loopback interface address').toBeGreaterThan(0);
    const addresses = own.length ? own : ['127.0.0.1'];
    const before = await dump(c.s);
    const answers = new Set<string>();
    for (const a of addresses) {
      const host = a.includes(':') ? `[${a}]` : a;
      for (const port of [2375, 2376, 22, 80, 5432]) {
        for (const token of [tenant.write, tenant.rootToken]) {
          const tcp = await c.api('POST', '/servers', token, { ip: '203.0.113.7', engine_endpoint: `tcp://${host}:${port}` });
          expectValidation(tcp, ['engine_endpoint']);
          answers.add(tcp.json.errors.engine_endpoint[0]);
          const ssh = await c.api('POST', '/servers', token, { ip: a, port, private_key_uuid: tenant.w.keyUuid });
          expectValidation(ssh, ['ip']);
          answers.add(ssh.json.errors.ip[0]);
          const patch = await c.api('PATCH', `/servers/${tenant.w.server2Uuid}`, token, { engine_endpoint: `tcp://${host}:${port}` });
          expectValidation(patch, ['engine_endpoint']);
          answers.add(patch.json.errors.engine_endpoint[0]);
        }
      }
    }
    expect([...answers]).toEqual([TEAM_REFUSAL]);
    expect(await dump(c.s)).toEqual(before);
    const host = addresses[0]!.includes(':') ? `[${addresses[0]}]` : addresses[0]!;
    const r = await c.api('POST', '/servers', c.write, { ip: addresses[0], engine_endpoint: `tcp://${host}:2375` });
    expect(r.status, r.text).toBe(201);
  });

  it('metadata services and link-local addresses are refused for every team, in every spelling, without connecting', async () => {
    const before = await dump(c.s);
    const key = tenant.w.keyUuid;
    const cases: [Record<string, unknown>, string][] = [
      [{ ip: '169.254.169.254', private_key_uuid: key }, 'ip'],
      [{ ip: '2852039166', private_key_uuid: key }, 'ip'],
      [{ ip: '0xa9fea9fe', private_key_uuid: key }, 'ip'],
      [{ ip: '::ffff:169.254.169.254', private_key_uuid: key }, 'ip'],
      [{ ip: 'metadata.google.internal', private_key_uuid: key }, 'ip'],
      [{ ip: 'fe80::1', private_key_uuid: key }, 'ip'],
      [{ ip: 'fd00:ec2::254', private_key_uuid: key }, 'ip'],
      [{ ip: '100.100.100.200', private_key_uuid: key }, 'ip'],
      [{ ip: '169.254.1.1', private_key_uuid: key }, 'ip'],
      [{ ip: '10.0.0.9', engine_endpoint: 'tcp://169.254.169.254:80' }, 'engine_endpoint'],
      [{ ip: '10.0.0.9', engine_endpoint: 'tcp://metadata.google.internal:80' }, 'engine_endpoint'],
      [{ ip: '10.0.0.9', private_key_uuid: key, engine_endpoint: 'ssh://root@[fd00:ec2::254]:22/var/run/docker.sock' }, 'engine_endpoint'],
      [{ ip: '10.0.0.9', private_key_uuid: key, engine_endpoint: 'ssh://root@169.254.169.254/var/run/docker.sock' }, 'engine_endpoint'],
    ];
    for (const [body, field] of cases) {
      const r = await c.api('POST', '/servers', tenant.write, body);
      expectValidation(r, [field]);
      expect(r.json.errors[field][0], JSON.stringify(body)).toMatch(/metadata|link-local/);
    }
    // The root team too, and through PATCH.
    expectValidation(await c.api('POST', '/servers', c.root, { ip: '169.254.169.254', private_key_uuid: c.w.keyUuid }), ['ip']);
    expectValidation(await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.root, { ip: '169.254.169.254' }), ['ip']);
    expect(await dump(c.s)).toEqual(before);
  });

  it('an SSH endpoint needs a key, TLS is for tcp:// only; the ssh:// form sets ip, port and user', async () => {
    expectValidation(await c.api('POST', '/servers', tenant.write, { ip: '10.0.0.9', engine_endpoint: 'ssh://deploy@10.0.0.9:2222/run/docker.sock' }), ['private_key_uuid']);
    const made = await c.api('POST', '/servers', tenant.write, { ip: '10.0.0.1', private_key_uuid: tenant.w.keyUuid, engine_endpoint: 'ssh://deploy@10.0.0.9:2222/run/docker.sock' });
    expect(made.status, made.text).toBe(201);
    expect((await c.api('GET', `/servers/${made.json.uuid}`, tenant.write)).json).toMatchObject({
      ip: '10.0.0.9',
      port: 2222,
      user: 'deploy',
      engine_endpoint: 'ssh://deploy@10.0.0.9:2222/run/docker.sock',
      transport: 'ssh',
    });
    // A new address rewrites the stored ssh:// endpoint (and drops any pinned host key).
    await c.s.db
      .updateTable('servers')
      .set({ host_key_fingerprint: 'SHA256:' + 'A'.repeat(43) })
      .where('uuid', '=', made.json.uuid)
      .execute();
    expect((await c.api('PATCH', `/servers/${made.json.uuid}`, tenant.write, { ip: '10.0.0.10' })).status).toBe(201);
    expect((await c.api('GET', `/servers/${made.json.uuid}`, tenant.write)).json).toMatchObject({ engine_endpoint: 'ssh://deploy@10.0.0.10:2222/run/docker.sock', host_key_fingerprint: null });
  });

  it('records from before these rules are refused at connect time: validate does not connect, a deployment fails saying why', async () => {
    const row = await c.s.db.selectFrom('servers').select('id').where('uuid', '=', tenant.w.serverUuid).executeTakeFirstOrThrow();
    await c.s.db.updateTable('servers').set({ engine_endpoint: 'unix:///var/run/berth-never-here.sock' }).where('id', '=', row.id).execute();
    try {
      const v = await c.api('POST', `/servers/${tenant.w.serverUuid}/validate`, tenant.write);
      expect(v.json).toMatchObject({ is_reachable: false, is_usable: false });
      expect(v.json.validation_logs).toBe(TEAM_REFUSAL);
      const d = await c.api('POST', `/deploy?uuid=${tenant.w.appUuid}`, (await c.s.token({ permissions: ['deploy'], team: tenant.id })).token);
      const done = await finished({ ...c, root: tenant.rootToken }, d.json.deployments[0].deployment_uuid);
      expect(done.status).toBe('failed');
      expect(done.logs).toContain(TEAM_REFUSAL);
    } finally {
      await c.s.db.updateTable('servers').set({ engine_endpoint: null }).where('id', '=', row.id).execute();
    }
  });
});

describe('container settings that reach into the host', () => {
  const reaching: [string, string, string][] = [
    ['privileged', '    privileged: true\n', 'services.app.privileged (line 4)'],
    ['the engine socket', '    volumes:\n      - data:/data\n      - /var/run/docker.sock:/var/run/docker.sock\n', 'services.app.volumes (line 6): "/var/run/docker.sock" binds the engine socket'],
    ['/etc', '    volumes:\n      - /etc:/host-etc:ro\n', 'services.app.volumes (line 5): "/etc" binds a system path'],
    ['/var (holds /var/run)', '    volumes:\n      - type: bind\n        source: /var\n        target: /v\n', 'services.app.volumes (line 5): "/var" binds a system path'],
    ['any host path', '    volumes:\n      - /srv/data:/data\n', 'services.app.volumes (line 5): "/srv/data" binds a host path'],
    ['cap_add', '    cap_add:\n      - SYS_ADMIN\n', 'services.app.cap_add (line 4)'],
    ['devices', '    devices:\n      - /dev/sda:/dev/sda\n', 'services.app.devices (line 4)'],
    ['network_mode: host', '    network_mode: host\n', 'services.app.network_mode (line 4)'],
    ['pid: host', '    pid: host\n', 'services.app.pid (line 4)'],
    ['ipc: host', '    ipc: host\n', 'services.app.ipc (line 4)'],
    ['uts: host', '    uts: host\n', 'services.app.uts (line 4)'],
    ['userns_mode: host', '    userns_mode: host\n', 'services.app.userns_mode (line 4)'],
    ['security_opt', '    security_opt:\n      - seccomp:unconfined\n', 'services.app.security_opt (line 4)'],
  ];

  it.each(reaching)('%s: 422 naming the key and its line for a tenant’s write and root tokens and the root team alike, nothing stored', async (_label, lines, message) => {
    const before = await dump(c.s);
    for (const [token, w] of [
      [tenant.write, tenant.w],
      [tenant.rootToken, tenant.w],
      [c.root, c.w],
    ] as const) {
      const r = await c.api('POST', '/services', token, { project_uuid: w.projectUuid, server_uuid: w.serverUuid, environment_name: 'production', docker_compose_raw: compose(lines) });
      expectValidation(r, ['docker_compose_raw']);
      expect(r.json.errors.docker_compose_raw.join('\n')).toContain(message);
      expect(r.json.errors.docker_compose_raw.join('\n')).toContain('host access');
      expectValidation(await c.api('PATCH', `/services/${w.serviceUuid}`, token, { docker_compose_raw: compose(lines) }), ['docker_compose_raw']);
    }
    expect(await dump(c.s)).toEqual(before);
  });

  it('only a root token of the root team may turn on host access: a tenant’s root token is 403, a write token is 403 naming root', async () => {
    const r = await c.api('PATCH', `/servers/${tenant.w.serverUuid}`, tenant.rootToken, { host_access: true });
    expect(r.status).toBe(403);
    expect(r.json).toEqual({ message: "Only a token of the instance's root team may do this." });
    const w = await c.api('PATCH', `/servers/${c.w.serverUuid}`, c.write, { host_access: true });
    expect(w.status).toBe(403);
    expect(w.json.missing_permissions).toEqual(['root']);
    expect((await c.api('GET', `/servers/${tenant.w.serverUuid}`, tenant.write)).json.host_access).toBe(false);
  });

  it('with host access on a root-team server, the same settings are accepted there; a destination on the host network too; a migration to a server without it is refused', async () => {
    const { uuid: server } = (await c.api('POST', '/servers', c.root, { ip: '10.9.0.1', name: 'trusted' })).json;
    const { uuid: plain } = (await c.api('POST', '/servers', c.root, { ip: '10.9.0.2', name: 'plain' })).json;
    expectValidation(await c.api('POST', `/servers/${server}/destinations`, c.root, { network: 'host' }), ['network']);
    expect((await c.api('PATCH', `/servers/${server}`, c.root, { host_access: true })).status).toBe(201);
    expect((await c.api('POST', `/servers/${server}/destinations`, c.root, { network: 'host' })).status).toBe(201);
    const dests = (await c.api('GET', `/servers/${server}/destinations`, c.root)).json;
    const svc = await c.api('POST', '/services', c.write, {
      project_uuid: c.w.projectUuid,
      server_uuid: server,
      destination_uuid: dests[0].uuid,
      environment_name: 'production',
      docker_compose_raw: compose('    privileged: true\n    volumes:\n      - /var/run/docker.sock:/var/run/docker.sock\n'),
    });
    expect(svc.status, svc.text).toBe(201);
    const target = (await c.api('GET', `/servers/${plain}/destinations`, c.root)).json[0].uuid;
    const before = await dump(c.s);
    const m = await c.api('POST', `/services/${svc.json.uuid}/migrate`, c.write, { destination_uuid: target });
    expectValidation(m, ['destination_uuid']);
    expect(m.json.errors.destination_uuid[0]).toMatch(/privileged/);
    expect(await dump(c.s)).toEqual(before);
  });

  it('one more key per tenant does not make SSH servers share anything across teams', async () => {
    // The tenant's own key on its own server: another team's key uuid is a 404, like a missing one.
    const k = (await c.api('POST', '/security/keys', c.root, { private_key: freshKey() })).json.uuid;
    const r = await c.api('POST', '/servers', tenant.write, { ip: '10.0.0.20', private_key_uuid: k });
    expect(r.status).toBe(404);
  });
});
