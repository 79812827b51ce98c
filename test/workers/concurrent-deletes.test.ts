/**
 * Deletes of one resource racing (four at once, over real HTTP) answer one 200 and 404s, whatever
 * the engine's state: the mark `deleting` is claimed in one statement, so only one delete goes
 * on; an engine that cannot be reached leaves the mark, and a later delete answers 404 too
 * (the resource is on its way out; berth finishes it once the engine answers).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

let s: TestServer;
let dir: string;
let project: string;
let server: string;
beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 10_000 });
  dir = tempDir('berth-del-');
  // An engine socket nobody listens on: every engine call fails at once.
  const t = s.rootToken;
  server = (await call(s.url, 'POST', '/api/v1/servers', { token: t, body: { ip: '127.0.0.1', engine_endpoint: `unix://${path.join(dir, 'nobody.sock')}` } })).json.uuid;
  project = (await call(s.url, 'POST', '/api/v1/projects', { token: t, body: { name: 'deletes' } })).json.uuid;
});
afterAll(async () => {
  await s?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function app(name: string): Promise<string> {
  const r = await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
    token: s.rootToken,
    body: { project_uuid: project, server_uuid: server, environment_name: 'production', docker_registry_image_name: 'nginx', name },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.uuid;
}

describe('concurrent deletes of one resource', () => {
  it('an application whose engine cannot be reached: one 200, three 404s, and a later delete 404 too', async () => {
    const uuid = await app('unreachable');
    const replies = await Promise.all(Array.from({ length: 4 }, () => call(s.url, 'DELETE', `/api/v1/applications/${uuid}`, { token: s.rootToken })));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 404, 404, 404]);
    expect(replies.find((r) => r.status === 200)!.json.message).toMatch(/could not be reached/);
    for (const r of replies.filter((x) => x.status === 404)) expect(r.json).toEqual({ message: 'Resource not found.' });
    expect((await call(s.url, 'GET', `/api/v1/applications/${uuid}`, { token: s.rootToken })).json.status).toBe('deleting');
    expect((await call(s.url, 'DELETE', `/api/v1/applications/${uuid}`, { token: s.rootToken })).status).toBe(404);
  });

  it('sequential deletes of an application: one 200, then 404', async () => {
    const uuid = await app('twice');
    const first = await call(s.url, 'DELETE', `/api/v1/applications/${uuid}`, { token: s.rootToken });
    expect(first.status).toBe(200);
    expect((await call(s.url, 'DELETE', `/api/v1/applications/${uuid}`, { token: s.rootToken })).status).toBe(404);
  });
});
