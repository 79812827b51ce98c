/**
 * Coolify's start of an application is a deployment: a git or Dockerfile application that was
 * never built is built and deployed by start (and restart), instead of failing with "deploy it
 * first"; a built one starts its last image; an image application starts as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let place: Record<string, string>;
beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0 });
  const project_uuid = (await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'start-builds' } })).json.uuid;
  const server_uuid = (await call(s.url, 'POST', '/api/v1/servers', { token: s.rootToken, body: { name: 'box', ip: '10.0.0.9' } })).json.uuid;
  place = { project_uuid, server_uuid, environment_name: 'production' };
}, 60_000);
afterAll(() => s?.stop());

const api = (method: string, path: string, body?: Record<string, unknown>) => call(s.url, method, `/api/v1${path}`, { token: s.rootToken, body });
const kindOf = async (deploymentUuid: string) => (await s.db.selectFrom('deployments').select('kind').where('uuid', '=', deploymentUuid).executeTakeFirstOrThrow()).kind;

describe('start of a never-built application', () => {
  it('queues a deploy (build and run) for a git application and an inline Dockerfile one, on start and restart', async () => {
    const git = await api('POST', '/applications/public', { ...place, git_repository: 'https://git.example.test/team/app.git', git_branch: 'main', build_pack: 'dockerfile', ports_exposes: '80' });
    expect(git.status).toBe(201);
    const started = await api('POST', `/applications/${git.json.uuid}/start`);
    expect(started.status, started.text).toBe(200);
    expect(started.json.message).not.toContain('deploy it first');
    expect(await kindOf(started.json.deployment_uuid)).toBe('deploy');
    expect(await kindOf((await api('POST', `/applications/${git.json.uuid}/restart`)).json.deployment_uuid)).toBe('deploy');

    const inline = await api('POST', '/applications/dockerfile', { ...place, dockerfile: Buffer.from('FROM busybox\n').toString('base64'), ports_exposes: '80' });
    expect(await kindOf((await api('POST', `/applications/${inline.json.uuid}/start`)).json.deployment_uuid)).toBe('deploy');
  });

  it('a stop stays a stop; an image application and a built one start as before', async () => {
    const git = await api('POST', '/applications/public', { ...place, git_repository: 'https://git.example.test/team/two.git', git_branch: 'main', build_pack: 'dockerfile', ports_exposes: '80' });
    expect(await kindOf((await api('POST', `/applications/${git.json.uuid}/stop`)).json.deployment_uuid)).toBe('stop');
    const image = await api('POST', '/applications/dockerimage', { ...place, docker_registry_image_name: 'nginx', ports_exposes: '80' });
    expect(await kindOf((await api('POST', `/applications/${image.json.uuid}/start`)).json.deployment_uuid)).toBe('start');
    // Once built (its record names a built image), start starts that image.
    const row = await s.db.selectFrom('resources').select(['id', 'config']).where('uuid', '=', git.json.uuid).executeTakeFirstOrThrow();
    await s.db
      .updateTable('resources')
      .set({ config: JSON.stringify({ ...JSON.parse(row.config), docker_registry_image_tag: 'built1' }) })
      .where('id', '=', row.id)
      .execute();
    expect(await kindOf((await api('POST', `/applications/${git.json.uuid}/start`)).json.deployment_uuid)).toBe('start');
  });
});
