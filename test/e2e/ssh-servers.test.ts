/**
 * Servers reached over SSH, end to end: a real sshd on loopback (scripts/sshd.sh) in front of a
 * real podman engine's socket, keys made by the real ssh-keygen, berth over its REST API. Covers
 * keys as people have them, validation that pins the host key, the whole life of an application
 * over SSH (its scheduled tasks' commands included), one reused connection, a changed host key, a refused key, key rotation, and the
 * words berth uses when something is wrong.
 */
import dns from 'node:dns/promises';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyHost, TEAM_REFUSAL } from '../../src/core/network-guard.js';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { freePort } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeKey, SSH_TEST_USER, sshdAvailable, useSshd, type TestKey } from '../helpers/sshd.js';
import { Api, containerState, deployed, ensureSleeperImage, registerSshServer, SLEEPER_IMAGE, until } from './support.js';

describe.skipIf(!enginesAvailable || !sshdAvailable)('servers over SSH', () => {
  const engines = useEngines();
  const sshd = useSshd();
  let s: TestServer;
  let api: Api;
  let key: TestKey;
  let keyUuid: string;
  let project: string;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE, sshTimeoutMs: 2_000 });
    api = new Api(s.url, s.rootToken);
    key = makeKey();
    sshd.authorize('root', key.publicLine);
    keyUuid = (await api.ok('POST', '/security/keys', { name: 'deploy key', private_key: key.text })).uuid;
    project = (await api.ok('POST', '/projects', { name: 'ssh' })).uuid;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** sshd processes serving connections now (one per SSH connection). */
  const connections = () => sshd.connections();

  async function app(serverUuid: string, dest: string, name: string) {
    const [repo, tag] = SLEEPER_IMAGE.split(':');
    return (
      await api.ok('POST', '/applications/dockerimage', {
        project_uuid: project,
        server_uuid: serverUuid,
        destination_uuid: dest,
        environment_name: 'production',
        name,
        docker_registry_image_name: repo,
        docker_registry_image_tag: tag,
      })
    ).uuid as string;
  }

  it('an OpenSSH key from ssh-keygen is accepted; its public key and fingerprint are shown without read:sensitive, the private part only with it', async () => {
    const read = (await s.token({ permissions: ['read'] })).token;
    const sensitive = (await s.token({ permissions: ['read:sensitive'] })).token;
    const asRead = await new Api(s.url, read).ok('GET', `/security/keys/${keyUuid}`);
    expect(asRead.fingerprint).toBe(key.fingerprint);
    expect(asRead.public_key).toBe(key.publicLine);
    expect(asRead).not.toHaveProperty('private_key');
    const listed = await new Api(s.url, read).ok('GET', '/security/keys');
    expect(listed.find((k: { uuid: string }) => k.uuid === keyUuid)).toMatchObject({ fingerprint: key.fingerprint, public_key: key.publicLine });
    expect((await new Api(s.url, sensitive).ok('GET', `/security/keys/${keyUuid}`)).private_key).toBe(key.text);
  });

  it('validate pins the host key sshd presents (as ssh-keygen -lf prints it); the server is managed; an application lives its whole life over SSH on one reused connection', async () => {
    const srv = await registerSshServer(api, 'ssh-a', { port: sshd.port, keyUuid, socket: engines.socketA });
    expect(srv.validation, JSON.stringify(srv.validation)).toMatchObject({ is_reachable: true, is_usable: true, host_key_fingerprint: sshd.hostKey() });
    expect(srv.validation.validation_logs).toContain(`pinned (trust on first use)`);
    const got = await api.ok('GET', `/servers/${srv.uuid}`);
    expect(got).toMatchObject({ transport: 'ssh', is_managed: true, host_key_fingerprint: sshd.hostKey(), engine_endpoint: `ssh://root@127.0.0.1:${sshd.port}${engines.socketA}` });

    const uuid = await app(srv.uuid, srv.dest, 'over-ssh');
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid);
    expect(containerState(engines, 'a', uuid)).toMatchObject({ running: true });
    engines.podman('a', ['exec', uuid, 'sh', '-c', 'echo hello-from-ssh > /proc/1/fd/1']);
    const logs = await until(
      'the log line',
      async () => {
        const r = await api.ok('GET', `/applications/${uuid}/logs`);
        return String(r.logs).includes('hello-from-ssh') ? r.logs : undefined;
      },
      10_000,
    );
    expect(logs).toContain('hello-from-ssh');
    for (const [action, running] of [
      ['stop', false],
      ['start', true],
      ['restart', true],
    ] as const) {
      await deployed(api, (await api.ok('POST', `/applications/${uuid}/${action}`)).deployment_uuid);
      expect(containerState(engines, 'a', uuid)?.running, action).toBe(running);
    }
    // A scheduled task's command runs in the container over SSH too, and its timeout kills it there.
    const ran = async (body: Record<string, unknown>) => {
      const t = (await api.ok('POST', `/applications/${uuid}/scheduled-tasks`, { frequency: 'daily', ...body })).uuid;
      const e = (await api.ok('POST', `/applications/${uuid}/scheduled-tasks/${t}/execute`)).execution_uuid;
      return until(
        'the task run',
        async () => {
          const r = (await api.ok('GET', `/applications/${uuid}/scheduled-tasks/${t}/executions`)).find((x: { uuid: string }) => x.uuid === e);
          return r && r.status !== 'running' ? r : undefined;
        },
        30_000,
      );
    };
    expect(await ran({ name: 'over ssh', command: 'echo task-over-ssh' })).toMatchObject({ status: 'success', exit_code: 0, logs: 'task-over-ssh\n' });
    expect(await ran({ name: 'slow over ssh', command: 'sleep 419', timeout: 1 })).toMatchObject({ status: 'failed', exit_code: null });
    await until('the sleep killed', async () => (engines.podman('a', ['exec', uuid, 'ps']).includes('sleep 419') ? undefined : true), 10_000, 250);
    // The engine's events come over SSH too: a container removed behind berth shows within 5 s.
    expect((await api.ok('GET', `/applications/${uuid}`)).status).toBe('running:unknown');
    engines.podman('a', ['rm', '-f', uuid]);
    await until('berth sees the container gone, over SSH', async () => ((await api.ok('GET', `/applications/${uuid}`)).status === 'exited' ? true : undefined), 5_000, 100);
    // Every request above went through one SSH connection (the validate's own was closed).
    expect(connections()).toBe(1);
  }, 90_000);
});

describe.skipIf(!enginesAvailable || !sshdAvailable)('servers over SSH: host keys, refused keys, rotation', () => {
  const engines = useEngines();
  const sshd = useSshd();
  let s: TestServer;
  let api: Api;
  let project: string;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE, sshTimeoutMs: 2_000 });
    api = new Api(s.url, s.rootToken);
    project = (await api.ok('POST', '/projects', { name: 'ssh keys' })).uuid;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  async function newKey(authorized = true): Promise<TestKey & { uuid: string }> {
    const k = makeKey();
    if (authorized) sshd.authorize('root', k.publicLine);
    return { ...k, uuid: (await api.ok('POST', '/security/keys', { private_key: k.text })).uuid };
  }

  async function deployOn(srv: { uuid: string; dest: string }, name: string): Promise<{ app: string; deployment: any }> {
    const [repo, tag] = SLEEPER_IMAGE.split(':');
    const app = (
      await api.ok('POST', '/applications/dockerimage', {
        project_uuid: project,
        server_uuid: srv.uuid,
        destination_uuid: srv.dest,
        environment_name: 'production',
        name,
        docker_registry_image_name: repo,
        docker_registry_image_tag: tag,
      })
    ).uuid;
    const d = (await api.ok('POST', `/deploy?uuid=${app}`)).deployments[0].deployment_uuid;
    const deployment = await until(
      'deployment end',
      async () => {
        const r = await api.ok('GET', `/deployments/${d}`);
        return ['queued', 'in_progress'].includes(r.status) ? undefined : r;
      },
      // A first deployment over a new SSH connection took over 30 s in a loaded full run.
      90_000,
    );
    return { app, deployment };
  }

  it('a changed host key refuses every connection with a message that says how to accept it; accept_host_key (or clearing the pin) does so deliberately', async () => {
    const k = await newKey();
    const srv = await registerSshServer(api, 'rekeyed', { port: sshd.port, keyUuid: k.uuid, socket: engines.socketA });
    const first = sshd.hostKey();
    expect(srv.validation.host_key_fingerprint).toBe(first);
    sshd.rekey();
    const second = sshd.hostKey();
    expect(second).not.toBe(first);

    const v = await api.ok('POST', `/servers/${srv.uuid}/validate`);
    expect(v).toMatchObject({ is_reachable: false, is_usable: false, host_key_fingerprint: first });
    expect(v.validation_logs).toContain(`host key of 127.0.0.1:${sshd.port} changed`);
    expect(v.validation_logs).toContain(first);
    expect(v.validation_logs).toContain(second);
    expect(v.validation_logs).toContain('accept_host_key');
    // Deployments are refused too, for the same reason, and nothing runs.
    const { app, deployment } = await deployOn(srv, 'after-rekey');
    expect(deployment.status).toBe('failed');
    expect(deployment.logs).toContain('host key of');
    expect(containerState(engines, 'a', app)).toBeNull();

    const accepted = await api.ok('POST', `/servers/${srv.uuid}/validate`, { accept_host_key: true });
    expect(accepted, accepted.validation_logs).toMatchObject({ is_reachable: true, is_usable: true, host_key_fingerprint: second });
    expect(accepted.validation_logs).toContain(`accepted, replacing ${first}`);
    const afterAccept = (await deployOn(srv, 'accepted')).deployment;
    expect(afterAccept.status, afterAccept.logs).toBe('finished');

    // Forgetting the pin through PATCH (write permission) lets the next validate pin again.
    sshd.rekey();
    const write = new Api(s.url, (await s.token({ permissions: ['write'] })).token);
    await write.ok('PATCH', `/servers/${srv.uuid}`, { host_key_fingerprint: null });
    expect((await api.ok('GET', `/servers/${srv.uuid}`)).host_key_fingerprint).toBeNull();
    expect(await write.ok('POST', `/servers/${srv.uuid}/validate`)).toMatchObject({ is_usable: true, host_key_fingerprint: sshd.hostKey() });
  });

  it('a fingerprint given at create is the pin: a host presenting another key is refused from the first validate', async () => {
    const k = await newKey();
    const other = makeKey().fingerprint;
    const { uuid } = await api.ok('POST', '/servers', {
      ip: '127.0.0.1',
      port: sshd.port,
      private_key_uuid: k.uuid,
      engine_endpoint: `ssh://root@127.0.0.1:${sshd.port}${engines.socketA}`,
      host_key_fingerprint: other,
    });
    const v = await api.ok('POST', `/servers/${uuid}/validate`);
    expect(v).toMatchObject({ is_reachable: false, host_key_fingerprint: other });
    expect(v.validation_logs).toContain('changed');
    const right = await api.ok('POST', '/servers', {
      ip: '127.0.0.1',
      port: sshd.port,
      private_key_uuid: k.uuid,
      engine_endpoint: `ssh://root@127.0.0.1:${sshd.port}${engines.socketA}`,
      host_key_fingerprint: sshd.hostKey(),
    });
    expect(await api.ok('POST', `/servers/${right.uuid}/validate`)).toMatchObject({ is_usable: true, host_key_fingerprint: sshd.hostKey() });
  });

  it('a key the server does not accept: validate says the login was refused and names the offered key', async () => {
    const k = await newKey(false);
    const srv = await registerSshServer(api, 'refused-key', { port: sshd.port, keyUuid: k.uuid, socket: engines.socketA });
    expect(srv.validation).toMatchObject({ is_reachable: false, is_usable: false, host_key_fingerprint: null });
    expect(srv.validation.validation_logs).toContain(`login as root on 127.0.0.1:${sshd.port} was refused for the key ${k.fingerprint}`);
    expect(srv.validation.validation_logs).toContain('authorized_keys');
  });

  it('key rotation: a server moved to a new key, and a key whose material is replaced, both reconnect with the new key', async () => {
    const k1 = await newKey();
    const srv = await registerSshServer(api, 'rotated', { port: sshd.port, keyUuid: k1.uuid, socket: engines.socketA });
    expect((await deployOn(srv, 'rot-1')).deployment.status).toBe('finished');

    // Move the server to k2 and take k1 off the server: the next deployment logs in with k2.
    const k2 = makeKey();
    const k2Uuid = (await api.ok('POST', '/security/keys', { private_key: k2.text })).uuid;
    sshd.setAuthorized('root', [k2.publicLine]);
    await api.ok('PATCH', `/servers/${srv.uuid}`, { private_key_uuid: k2Uuid });
    expect((await api.ok('GET', `/servers/${srv.uuid}`)).is_managed).toBe(false);
    expect(await api.ok('POST', `/servers/${srv.uuid}/validate`)).toMatchObject({ is_usable: true });
    expect((await deployOn(srv, 'rot-2')).deployment.status).toBe('finished');

    // Replace k2's material with k3 (same key record): servers using it reconnect with k3.
    const k3 = makeKey();
    sshd.setAuthorized('root', [k3.publicLine]);
    await api.ok('PATCH', `/security/keys/${k2Uuid}`, { private_key: k3.text });
    expect((await api.ok('GET', `/security/keys/${k2Uuid}`)).fingerprint).toBe(k3.fingerprint);
    expect((await deployOn(srv, 'rot-3')).deployment.status).toBe('finished');
    sshd.setAuthorized('root', []);
  }, 240_000); // three deployments over SSH and a validation: over 30 s on a loaded 2-core machine
});

describe.skipIf(!sshdAvailable)('servers over SSH: what went wrong, in words', () => {
  const sshd = useSshd();
  let s: TestServer;
  let api: Api;
  let keyUuid: string;
  let fingerprint: string;
  const closers: (() => void)[] = [];

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE, sshTimeoutMs: 1_500 });
    api = new Api(s.url, s.rootToken);
    const k = makeKey();
    fingerprint = k.fingerprint;
    sshd.authorize('root', k.publicLine);
    sshd.authorize(SSH_TEST_USER, k.publicLine);
    keyUuid = (await api.ok('POST', '/security/keys', { private_key: k.text })).uuid;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    for (const c of closers) c();
  });

  async function validate(body: Record<string, unknown>): Promise<{ logs: string; v: any }> {
    const { uuid } = await api.ok('POST', '/servers', { ip: '127.0.0.1', private_key_uuid: keyUuid, ...body });
    const v = await api.ok('POST', `/servers/${uuid}/validate`);
    expect(v.is_usable).toBe(false);
    return { logs: v.validation_logs, v };
  }

  /** A directory others may enter (mkdtemp makes 0700 ones). */
  function openDir(): string {
    const d = mkdtempSync(path.join(os.tmpdir(), 'berth-sock-'));
    chmodSync(d, 0o755);
    closers.push(() => rmSync(d, { recursive: true, force: true }));
    return d;
  }

  it('nothing listens on the port: connection refused, with what to check', async () => {
    const { logs } = await validate({ port: await freePort() });
    expect(logs).toMatch(/^Connection to 127\.0\.0\.1:\d+ refused: nothing listens on port \d+ \(is sshd running/);
  });

  it('something accepts but never speaks: a timeout that names the port', async () => {
    const silent = net.createServer(() => undefined).listen(0, '127.0.0.1');
    closers.push(() => silent.close());
    await new Promise((r) => silent.once('listening', r));
    const { logs } = await validate({ port: (silent.address() as net.AddressInfo).port });
    expect(logs).toMatch(/^No SSH answer from 127\.0\.0\.1:\d+ within 2 s/);
  });

  it('something that is not SSH answers on the port: said so, and what it sent is not repeated', async () => {
    const web = http.createServer((_q, r) => r.end('secret-banner-4711')).listen(0, '127.0.0.1');
    closers.push(() => web.close());
    await new Promise((r) => web.once('listening', r));
    const { logs } = await validate({ port: (web.address() as net.AddressInfo).port });
    expect(logs).not.toContain('secret-banner-4711');
    expect(logs).toMatch(/does not speak SSH|No SSH answer|closed the connection/);
  });

  it('no socket at that path on the host: said so, with how to name another', async () => {
    const { v, logs } = await validate({ port: sshd.port, engine_endpoint: `ssh://root@127.0.0.1:${sshd.port}/nonexistent/docker.sock` });
    expect(v.is_reachable).toBe(true);
    expect(logs).toContain('No Docker socket at /nonexistent/docker.sock on 127.0.0.1');
    expect(logs).toContain('engine_endpoint');
  });

  it('the user may not open the socket: permission denied, with the docker group as the fix', async () => {
    const dir = openDir();
    const socket = path.join(dir, 'docker.sock');
    const server = net.createServer((c) => c.end()).listen(socket);
    await new Promise((r) => server.once('listening', r));
    chmodSync(socket, 0o600);
    closers.push(() => server.close());
    const { logs } = await validate({ port: sshd.port, user: SSH_TEST_USER, engine_endpoint: `ssh://${SSH_TEST_USER}@127.0.0.1:${sshd.port}${socket}` });
    expect(logs).toContain(`User ${SSH_TEST_USER} may not open ${socket} on 127.0.0.1 (permission denied)`);
    expect(logs).toContain('docker group');
  });

  it('something that is not a Docker Engine API answers on the socket: said so, its body not repeated', async () => {
    const dir = openDir();
    const socket = path.join(dir, 'not-docker.sock');
    const server = http.createServer((_q, r) => r.writeHead(404).end('not-docker-body-4711')).listen(socket);
    await new Promise((r) => server.once('listening', r));
    closers.push(() => server.close());
    const { logs } = await validate({ port: sshd.port, engine_endpoint: `ssh://root@127.0.0.1:${sshd.port}${socket}` });
    expect(logs).toContain('is not a Docker Engine API (HTTP 404');
    expect(logs).not.toContain('not-docker-body-4711');
  });

  it('the key is refused: the message names the offered fingerprint', async () => {
    const { logs } = await validate({ port: sshd.port, user: 'nobody' });
    expect(logs).toContain(`was refused for the key ${fingerprint}`);
  });
});

describe.skipIf(!sshdAvailable)('a team other than the root team: the berth host is not a port scanner', () => {
  const sshd = useSshd();
  let s: TestServer;
  let root: Api;
  let tenant: Api;
  let tenantId: number;
  let tenantKey: string;
  let rootKey: string;
  const connections = { silent: 0, web: 0 };
  const closers: (() => void)[] = [];
  let ports: number[];

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE, sshTimeoutMs: 1_500 });
    root = new Api(s.url, s.rootToken);
    const t = await s.team('Tenant');
    tenantId = t.id;
    tenant = new Api(s.url, t.rootToken);
    const k = makeKey();
    sshd.authorize('root', k.publicLine);
    tenantKey = (await tenant.ok('POST', '/security/keys', { private_key: k.text })).uuid;
    rootKey = (await root.ok('POST', '/security/keys', { private_key: k.text })).uuid;
    const silent = net.createServer(() => void connections.silent++).listen(0, '127.0.0.1');
    const web = http.createServer((_q, r) => (connections.web++, r.end('secret-banner-4711'))).listen(0, '127.0.0.1');
    await Promise.all([silent, web].map((x) => new Promise((r) => x.once('listening', r))));
    closers.push(
      () => silent.close(),
      () => web.close(),
    );
    // sshd, something silent, something that is not SSH, nothing at all.
    ports = [sshd.port, (silent.address() as net.AddressInfo).port, (web.address() as net.AddressInfo).port, await freePort()];
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    for (const c of closers) c();
  });

  /** This machine's addresses: loopback and every address of its interfaces berth calls the host. */
  const hostAddresses = () => [
    '127.0.0.1',
    ...Object.values(os.networkInterfaces())
      .flatMap((l) => l ?? [])
      .filter((a) => classifyHost(a.address) === 'host' && a.family === 'IPv4')
      .map((a) => a.address),
  ];

  it('creating an SSH server on any port of the host answers the same 422, and nothing is connected to', async () => {
    const answers = new Set<string>();
    for (const ip of hostAddresses()) {
      for (const port of ports) {
        const r = await tenant.req('POST', '/servers', { ip, port, private_key_uuid: tenantKey });
        expect(r.status).toBe(422);
        answers.add(JSON.stringify(r.json));
        const e = await tenant.req('POST', '/servers', { ip: '203.0.113.9', private_key_uuid: tenantKey, engine_endpoint: `ssh://root@${ip}:${port}/var/run/docker.sock` });
        expect(e.status).toBe(422);
        answers.add(JSON.stringify(e.json.errors.engine_endpoint));
      }
    }
    expect([...answers]).toEqual([JSON.stringify({ message: 'Validation error.', errors: { ip: [TEAM_REFUSAL] } }), JSON.stringify([TEAM_REFUSAL])]);
    expect(connections).toEqual({ silent: 0, web: 0 });
  });

  it('records from before the rule validate to the same answer for every port, without connecting; names resolving to the host are refused when connecting', async () => {
    const keyId = (await s.db.selectFrom('private_keys').select('id').where('uuid', '=', tenantKey).executeTakeFirstOrThrow()).id;
    const made: string[] = [];
    for (const ip of hostAddresses()) {
      for (const port of ports) {
        const { uuid } = await root.ok('POST', '/servers', { ip, port, private_key_uuid: rootKey });
        await s.db.updateTable('servers').set({ team_id: tenantId, private_key_id: keyId }).where('uuid', '=', uuid).execute();
        made.push(uuid);
      }
    }
    const logs = new Set<string>();
    for (const uuid of made) {
      const v = await tenant.ok('POST', `/servers/${uuid}/validate`);
      expect(v).toMatchObject({ is_reachable: false, is_usable: false });
      logs.add(v.validation_logs);
    }
    expect([...logs]).toEqual([TEAM_REFUSAL]);
    // A name is checked on the addresses it resolves to, when connecting: the same answer for every port.
    const name = os.hostname();
    const resolved = await dns.lookup(name, { all: true }).catch(() => []);
    if (resolved.length && resolved.every((a) => classifyHost(a.address) !== 'other')) {
      const byName = new Set<string>();
      for (const port of ports) {
        const { uuid } = await tenant.ok('POST', '/servers', { ip: name, port, private_key_uuid: tenantKey });
        byName.add((await tenant.ok('POST', `/servers/${uuid}/validate`)).validation_logs);
      }
      expect([...byName]).toEqual([`${name} resolves to an address berth does not connect to: ${TEAM_REFUSAL}`]);
    }
    expect(connections).toEqual({ silent: 0, web: 0 });
  });

  it('the root team still reaches the host over SSH and hears what went wrong', async () => {
    const { uuid } = await root.ok('POST', '/servers', { ip: '127.0.0.1', port: sshd.port, private_key_uuid: rootKey });
    const v = await root.ok('POST', `/servers/${uuid}/validate`);
    expect(v.is_reachable).toBe(true);
    expect(v.validation_logs).toContain(`logged in as root on 127.0.0.1:${sshd.port}`);
    const closed = await root.ok('POST', '/servers', { ip: '127.0.0.1', port: ports[3], private_key_uuid: rootKey });
    expect((await root.ok('POST', `/servers/${closed.uuid}/validate`)).validation_logs).toMatch(/refused: nothing listens on port/);
  });
});
