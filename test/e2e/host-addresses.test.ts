/**
 * The berth host is every address of the host (issue 22): a real podman engine reachable over TCP
 * on this machine's own interface address (a relay to its socket, as an engine port bound to all
 * interfaces would be). The root team may use it; any other team is refused at create, at update
 * and at validate of a record from before the rule, with one answer and without a connection.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyHost, TEAM_REFUSAL } from '../../src/core/network-guard.js';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api } from './support.js';

describe.skipIf(!enginesAvailable)(`an engine on the host's own interface address ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines();
  let s: TestServer;
  let root: Api;
  let tenant: Api;
  let tenantId: number;
  let relay: net.Server;
  let relayed = 0;
  let address: string;
  let endpoint: string;

  beforeAll(async () => {
    // The machine's first non-loopback IPv4 address, as os.networkInterfaces() lists it (what the guard reads).
    const own = Object.values(os.networkInterfaces())
      .flatMap((l) => l ?? [])
      .find((a) => a.family === 'IPv4' && !a.internal && classifyHost(a.address) === 'host');
    if (process.env.CI) expect(own, 'a CI machine has a non-loopback interface address').toBeDefined();
    address = own?.address ?? '127.0.0.1';
    relay = net.createServer((c) => {
      relayed++;
      const up = net.connect(engines.socketA);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, address, r));
    endpoint = `tcp://${address}:${(relay.address() as net.AddressInfo).port}`;
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image });
    root = new Api(s.url, s.rootToken);
    const t = await s.team('Tenant');
    tenantId = t.id;
    tenant = new Api(s.url, t.rootToken);
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    relay?.close();
  });

  it('the root team registers and validates it', async () => {
    const { uuid } = await root.ok('POST', '/servers', { ip: address, engine_endpoint: endpoint });
    expect(await root.ok('POST', `/servers/${uuid}/validate`)).toMatchObject({ is_reachable: true, is_usable: true });
    expect(relayed).toBeGreaterThan(0);
  });

  it('another team may not: create and update are the one 422, a record from before validates to the same answer, and nothing connects', async () => {
    // A relay of its own: the root team's server of the test before is watched through the first
    // one, and the watcher's reconnections are not this test's business.
    let reached = 0;
    const quiet = net.createServer((c) => {
      reached++;
      c.destroy();
    });
    await new Promise<void>((r) => quiet.listen(0, address, r));
    const endpoint = `tcp://${address}:${(quiet.address() as net.AddressInfo).port}`;
    for (const e of [endpoint, endpoint.replace(/:\d+$/, ':2375'), endpoint.replace(/:\d+$/, ':1')]) {
      const r = await tenant.req('POST', '/servers', { ip: '203.0.113.9', engine_endpoint: e });
      expect(r.status).toBe(422);
      expect(r.json.errors).toEqual({ engine_endpoint: [TEAM_REFUSAL] });
    }
    const own = await tenant.ok('POST', '/servers', { ip: '203.0.113.9', engine_endpoint: 'tcp://203.0.113.9:2375' });
    expect((await tenant.req('PATCH', `/servers/${own.uuid}`, { engine_endpoint: endpoint })).json.errors).toEqual({ engine_endpoint: [TEAM_REFUSAL] });
    const { uuid } = await root.ok('POST', '/servers', { ip: address, engine_endpoint: endpoint });
    await s.db.updateTable('servers').set({ team_id: tenantId }).where('uuid', '=', uuid).execute();
    expect(await tenant.ok('POST', `/servers/${uuid}/validate`)).toMatchObject({ is_reachable: false, is_usable: false, validation_logs: TEAM_REFUSAL });
    expect(reached).toBe(0);
    quiet.close();
  });

  it('a name resolving to the host is refused when connecting, with the same words whatever the port', async () => {
    const name = os.hostname();
    const resolved = await dns.lookup(name, { all: true }).catch(() => []);
    // Where the machine's own name resolves elsewhere (or nowhere), there is no such name to try.
    if (!resolved.length || resolved.some((a) => classifyHost(a.address) === 'other')) return;
    const before = relayed;
    const logs = new Set<string>();
    for (const port of [(relay.address() as net.AddressInfo).port, 2375]) {
      const { uuid } = await tenant.ok('POST', '/servers', { ip: '203.0.113.9', engine_endpoint: `tcp://${name}:${port}` });
      logs.add((await tenant.ok('POST', `/servers/${uuid}/validate`)).validation_logs);
    }
    expect([...logs]).toEqual([`${name} resolves to an address berth does not connect to: ${TEAM_REFUSAL}`]);
    expect(relayed).toBe(before);
  });
});
