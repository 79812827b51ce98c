/**
 * `berth mcp` runs the same background work as `serve` (src/assemble.ts start/stop): a long job
 * started through it keeps its lease while a `serve` shares the store, with a short lease
 * (BERTH_JOB_LEASE_MS=2000 on both). Before, the stdio server never renewed its leases, and
 * serve's sweep took such a deployment over and failed it after one lease.
 * The engine is a socket that accepts and never answers: the deployment runs until it is cut.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnyClient, stdioClient } from '../helpers/mcp.js';
import { call, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

// Short, but not so short that a loaded 2-core machine stalls a renewal past it.
const LEASE = { BERTH_JOB_LEASE_MS: '2000' };

let s: TestServer;
let dir: string;
let hung: net.Server;
const held = new Set<net.Socket>();
let client: AnyClient | undefined;
beforeAll(async () => {
  dir = tempDir('berth-stdio-lease-');
  hung = net.createServer((c) => {
    held.add(c);
    c.on('close', () => held.delete(c));
    c.on('error', () => undefined);
  });
  await new Promise<void>((r) => hung.listen(path.join(dir, 'hung.sock'), r));
  s = await startTestServer({}, LEASE);
});
afterAll(async () => {
  for (const c of held) c.destroy();
  await client?.close();
  hung?.close();
  await s?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('berth mcp beside serve', () => {
  it('a long deployment started through berth mcp keeps its lease for many leases, and is not taken over by serve', async () => {
    const t = s.rootToken;
    const server = (await call(s.url, 'POST', '/api/v1/servers', { token: t, body: { ip: '127.0.0.1', engine_endpoint: `unix://${path.join(dir, 'hung.sock')}` } })).json.uuid;
    const project = (await call(s.url, 'POST', '/api/v1/projects', { token: t, body: { name: 'stdio' } })).json.uuid;
    const app = (
      await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
        token: t,
        body: { project_uuid: project, server_uuid: server, environment_name: 'production', docker_registry_image_name: 'nginx' },
      })
    ).json.uuid;

    client = await stdioClient('v2-modern', s.dataDir, t, [], LEASE);
    const r = await client.callTool('deploy', { uuid: app });
    expect(r.isError, JSON.stringify(r)).toBeFalsy();
    const uuid = (r.structuredContent as { deployments: Array<{ deployment_uuid: string }> }).deployments[0]!.deployment_uuid;
    const row = () => s.db.selectFrom('deployments').select(['status', 'lease_owner', 'lease_until', 'logs']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
    const started = await until('the deployment to run in berth mcp', async () => {
      const x = await row();
      return x.status === 'in_progress' ? x : undefined;
    });
    // Three leases later: still running, still berth mcp's, its lease renewed.
    await new Promise((res) => setTimeout(res, 6_000));
    const later = await row();
    expect(later, later.logs).toMatchObject({ status: 'in_progress', lease_owner: started.lease_owner });
    expect(later.lease_until!).toBeGreaterThan(Date.now() - 200);

    // Take the engine away: the deployment ends as the engine says (failed), not as a takeover.
    hung.close();
    for (const c of held) c.destroy();
    await until('the deployment to end', async () => ((await row()).status === 'failed' ? true : undefined), 20_000);
    expect((await row()).lease_owner).toBe(started.lease_owner);
  }, 60_000);
});
