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
let sockets: net.Socket[] = [];
let appUuid: string;
let cleanup = () => {};
beforeAll(async () => {
  const dir = tempDir('berth-hung-');
  const sock = path.join(dir, 'engine.sock');
  hung = net.createServer((c) => sockets.push(c));
  await new Promise<void>((r) => hung.listen(sock, r));
  s = await startTestServer({ queueConcurrency: 1, queueCap: 1 });
  const t = s.rootToken;
  const server = (await call(s.url, 'POST', '/api/v1/servers', { token: t, body: { ip: '127.0.0.1', engine_endpoint: `unix://${sock}` } })).json.uuid;
  const project = (await call(s.url, 'POST', '/api/v1/projects', { token: t, body: { name: 'queue' } })).json.uuid;
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
});
