import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/**
 * A full per-server queue over real HTTP. The server's engine is a socket that accepts and never
 * answers (an engine hung mid-call), so the first deployment occupies the only slot.
 */
let s: TestServer;
let hung: net.Server;
const sockets: net.Socket[] = [];
let appUuid: string;
let serverUuid: string;
let projectUuid: string;
let cleanup = () => {};
beforeAll(async () => {
  const dir = tempDir('berth-hung-');
  const sock = path.join(dir, 'engine.sock');
  hung = net.createServer((c) => sockets.push(c));
  await new Promise<void>((r) => hung.listen(sock, r));
  s = await startTestServer({ queueConcurrency: 1, queueCap: 1 });
  const t = s.rootToken;
  const server = (serverUuid = (await call(s.url, 'POST', '/api/v1/servers', { token: t, body: { ip: '127.0.0.1', engine_endpoint: `unix://${sock}` } })).json.uuid);
  const project = (projectUuid = (await call(s.url, 'POST', '/api/v1/projects', { token: t, body: { name: 'queue' } })).json.uuid);
  appUuid = (
    await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
      token: t,
      body: { project_uuid: project, server_uuid: server, environment_name: 'production', docker_registry_image_name: 'nginx' },
    })
  ).json.uuid;
  cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  for (const c of sockets) c.destroy();
  hung.close();
  await s.stop();
  cleanup();
});

describe('per-server job queue', () => {
  it('answers 429 "Deployment queue is full." with Retry-After while the caller’s own bucket has room; nothing half-queued stays', async () => {
    const t = s.rootToken;
    const first = await call(s.url, 'POST', `/api/v1/deploy?uuid=${appUuid}`, { token: t });
    expect(first.status).toBe(200);
    const second = await call(s.url, 'POST', `/api/v1/applications/${appUuid}/restart`, { token: t });
    expect(second.status).toBe(200);
    const third = await call(s.url, 'POST', `/api/v1/deploy?uuid=${appUuid}`, { token: t });
    expect(third.status).toBe(429);
    expect(third.json).toEqual({ message: 'Deployment queue is full.' });
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(third.headers['x-ratelimit-remaining'])).toBeGreaterThan(100);
    // Only the two accepted deployments exist; the refused one left no record.
    const rows = await s.db.selectFrom('deployments').select(['kind', 'status']).orderBy('id').execute();
    expect(rows.map((r) => r.kind)).toEqual(['deploy', 'restart']);
    expect(rows.map((r) => r.status)).toEqual(['in_progress', 'queued']);
  });

  it('start_on_destination goes through the target’s queue too: full, the move stands, its start is refused and recorded, no deployment left', async () => {
    const t = s.rootToken;
    // A server berth cannot reach (records only), so the move itself needs no engine.
    const elsewhere = (await call(s.url, 'POST', '/api/v1/servers', { token: t, body: { ip: '10.70.0.1' } })).json.uuid;
    const app = (
      await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
        token: t,
        body: { project_uuid: projectUuid, server_uuid: elsewhere, environment_name: 'production', docker_registry_image_name: 'nginx' },
      })
    ).json.uuid;
    const destination = (await call(s.url, 'GET', `/api/v1/servers/${serverUuid}/destinations`, { token: t })).json[0].uuid;
    const r = await call(s.url, 'POST', `/api/v1/applications/${app}/migrate`, { token: t, body: { destination_uuid: destination, start_on_destination: true } });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ status: 'finished', started_on_destination: false });
    expect(r.json).not.toHaveProperty('start_deployment_uuid');
    expect(r.json.message).toMatch(/start could not be queued on the destination \(Deployment queue is full\.\)/);
    const m = (await call(s.url, 'GET', `/api/v1/migrations/${r.json.migration_uuid}`, { token: t })).json;
    expect(m).toMatchObject({ status: 'finished', start_on_destination: true, start_deployment_uuid: null, error: expect.stringMatching(/Deployment queue is full/) });
    expect((await call(s.url, 'GET', `/api/v1/applications/${app}`, { token: t })).json).toMatchObject({ server_uuid: serverUuid, status: 'exited' });
    const appId = (await s.db.selectFrom('resources').select('id').where('uuid', '=', app).executeTakeFirstOrThrow()).id;
    expect(await s.db.selectFrom('deployments').select('id').where('resource_id', '=', appId).execute()).toEqual([]);
  });
});
