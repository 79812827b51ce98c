/**
 * Preview records on both stores, without an engine (a record-only server runs nothing): the
 * first deploy with pr makes one preview even when several race, its domain from the
 * application's preview_url_template; GET lists it; DELETE and the application's delete remove it.
 * The engine side is test/e2e/previews.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api } from '../e2e/support.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('preview records', () => {
  let s: TestServer;
  let api: Api;
  let place: Record<string, string>;

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    const server = (await api.ok('POST', '/servers', { name: 'records', ip: '10.0.0.9' })).uuid;
    const project = (await api.ok('POST', '/projects', { name: 'previews' })).uuid;
    place = { project_uuid: project, server_uuid: server, environment_name: 'production' };
  });
  afterAll(() => s?.stop());

  const previews = async (uuid: string) => (await api.ok('GET', `/applications/${uuid}`)).previews;

  it('concurrent first deploys of one pull request make one preview, its domain from the template', async () => {
    const app = await api.ok('POST', '/applications/public', {
      ...place,
      git_repository: 'https://git.example.test/team/app.git',
      git_branch: 'main',
      build_pack: 'dockerfile',
      ports_exposes: '80',
      domains: 'https://app.example.test:8080/api,https://other.example.test',
      preview_url_template: 'pr-{{pr_id}}.preview.{{domain}}',
    });
    const answers = await Promise.all(Array.from({ length: 6 }, () => api.req('POST', '/deploy', { uuid: app.uuid, pr: 9 })));
    for (const a of answers) {
      expect(a.status, a.text).toBe(200);
      expect(a.json.deployments[0].message).toMatch(/preview of pull request #9 deployment queued/);
    }
    expect(await previews(app.uuid)).toEqual([{ pull_request_id: 9, status: null, fqdn: 'https://pr-9.preview.app.example.test', created_at: expect.any(String) }]);
    const d = await api.ok('GET', `/deployments/${answers[0]!.json.deployments[0].deployment_uuid}`);
    expect(d.pull_request_id).toBe(9);
    // pr 0 is the application itself, as Coolify's default.
    const own = await api.ok('POST', `/deploy?uuid=${app.uuid}&pr=0`);
    expect((await api.ok('GET', `/deployments/${own.deployments[0].deployment_uuid}`)).pull_request_id).toBe(0);
    await api.ok('POST', `/deploy?uuid=${app.uuid}&pr=3`);
    expect((await previews(app.uuid)).map((p: { pull_request_id: number }) => p.pull_request_id)).toEqual([3, 9]);

    const del = await api.ok('DELETE', `/applications/${app.uuid}/previews/9`);
    expect(del).toEqual({ message: 'Preview deployment deleted.', removed: [] });
    expect((await previews(app.uuid)).map((p: { pull_request_id: number }) => p.pull_request_id)).toEqual([3]);
    const again = await api.req('DELETE', `/applications/${app.uuid}/previews/9`);
    expect(again.status).toBe(404);
    expect(again.text).toBe('{"message":"Resource not found."}');

    // The application's delete takes its previews with it.
    await api.ok('DELETE', `/applications/${app.uuid}`);
    expect(await s.db.selectFrom('application_previews').selectAll().execute()).toEqual([]);
  });

  it('an application without a domain has previews without one; a dockercompose one has none', async () => {
    const app = await api.ok('POST', '/applications/public', { ...place, git_repository: 'https://git.example.test/team/app.git', git_branch: 'main', build_pack: 'dockerfile', ports_exposes: '80' });
    await api.ok('POST', `/deploy?uuid=${app.uuid}&pr=1`);
    expect((await previews(app.uuid))[0]).toMatchObject({ pull_request_id: 1, fqdn: null });
    const compose = await api.ok('POST', '/applications/public', {
      ...place,
      git_repository: 'https://git.example.test/team/app.git',
      git_branch: 'main',
      build_pack: 'dockercompose',
      ports_exposes: '80',
    });
    const r = await api.req('POST', '/deploy', { uuid: `${app.uuid},${compose.uuid}`, pr: 2 });
    expect(r.status).toBe(422);
    expect(r.json.errors.pr[0]).toMatch(/dockercompose/);
    // A refused target queues nothing, the other one included.
    expect((await previews(app.uuid)).map((p: { pull_request_id: number }) => p.pull_request_id)).toEqual([1]);
  });
});
