/**
 * Remote mode against a Coolify-like upstream (a scripted HTTP server speaking Coolify's shapes:
 * bare arrays without paging headers, GET /version as text, no OpenAPI document at
 * /api/v1/openapi.json, 404 "Not found." for what it does not offer).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../../src/core/operations/index.js';
import { scriptedUpstream, type Route } from './fake-upstream.js';
import { remoteClient, type RemoteClient } from './helpers.js';

const TOKEN = '5|Coolify0Secret0Token0Value';
const SECRET = TOKEN.split('|')[1]!;
const T = '2026-11-01T10:00:00.000000Z';
const project = (i: number) => ({ id: i, uuid: `project${i}`, name: `Project ${i}`, description: null, team_id: 0, created_at: T, updated_at: T });
const team = { id: 0, name: 'Root Team', description: null, personal_team: false, show_boarding: false, created_at: T, updated_at: T };

let deploymentsAsked = 0;
const routes: Record<string, Route> = {
  'GET /api/v1/version': () => ({ text: '4.3.11' }),
  'GET /api/v1/teams/current': () => ({ body: team }),
  'GET /api/v1/teams': () => ({ body: [team] }),
  'GET /api/v1/projects': () => ({ body: [project(1), project(2), project(3)] }),
  // Coolify's environment list carries fewer fields than berth's output schema.
  'GET /api/v1/projects/project1/environments': () => ({ body: [{ id: 1, uuid: 'env1', name: 'production' }] }),
  'POST /api/v1/deploy': () => ({ status: 429, headers: { 'retry-after': '60' }, body: { message: 'Deployment queue is full. Try again later.' } }),
  'GET /api/v1/deployments': () => (++deploymentsAsked === 1 ? { status: 429, headers: { 'retry-after': '1' }, body: { message: 'Deployment queue is full.' } } : { body: [] }),
  'GET /api/v1/servers/leaky': () => ({
    status: 500,
    body: {
      message: 'Server error.',
      debug: `request had Authorization: Bearer ${TOKEN}; tried postgres://admin:hunter2@db.internal:5432/coolify and token 17|AnotherSecretValue99`,
      password: 'plain-text-password',
    },
  }),
  'GET /api/v1/servers/huge': () => ({ status: 500, body: { message: 'x'.repeat(900), trace: 'y'.repeat(20_000) } }),
  'GET /api/v1/servers/html': () => ({ status: 502, text: `<html><body>Bad gateway for ${TOKEN}</body></html>` }),
};

let up: Awaited<ReturnType<typeof scriptedUpstream>>;
let c: RemoteClient;
const errorOf = (r: { isError?: boolean; content: Array<{ text?: string }> }) => {
  expect(r.isError).toBe(true);
  return JSON.parse(r.content[0]!.text!) as Record<string, unknown>;
};

beforeAll(async () => {
  up = await scriptedUpstream(routes);
  c = await remoteClient('v2-legacy', `${up.url}/api/v1/`, TOKEN);
});
afterAll(async () => {
  await c?.close();
  await up?.close();
});

describe('remote mode against a Coolify-like upstream', () => {
  it('starts (no OpenAPI, permissions unknown): every tool is listed, to be reported plainly when called', async () => {
    expect((await c.listTools()).tools.map((t) => t.name).sort()).toEqual(operations.map((o) => o.name).sort());
  });

  it('GET /version as text → { version }; a bare array without paging headers → total is its length, paged here', async () => {
    expect((await c.callTool('get_version')).structuredContent).toEqual({ version: '4.3.11' });
    expect((await c.callTool('list_projects')).structuredContent).toEqual({ items: [project(1), project(2), project(3)], total: 3, page: 1, per_page: 100 });
    expect((await c.callTool('list_projects', { page: 2, per_page: 1 })).structuredContent).toEqual({ items: [project(2)], total: 3, page: 2, per_page: 1 });
    // Fields the output schema does not know are dropped (the MCP client holds structured content to it).
    const { show_boarding: _dropped, ...known } = team;
    expect((await c.callTool('list_teams')).structuredContent).toEqual({ items: [known] });
  });

  it('an answer that does not match the output schema is a tool error naming the fields', async () => {
    const body = errorOf(await c.callTool('list_environments', { uuid: 'project1' }));
    expect(body.message).toMatch(/^The upstream's answer to list_environments does not match the tool's output schema \(field items\.0\.\w+: .+\)\.$/);
    expect(Object.keys(body.errors as object).sort()).toEqual(['items.0.created_at', 'items.0.description', 'items.0.project_id', 'items.0.updated_at']);
  });

  it('a tool the upstream does not offer (migrate in a Coolify production build) is reported plainly', async () => {
    const body = errorOf(await c.callTool('migrate_application', { uuid: 'app1', destination_uuid: 'dest1' }));
    expect(body).toEqual({ message: 'Not found.', docs: 'https://coolify.io/docs' });
  });

  it('"Deployment queue is full." on a POST: not retried, retry after the upstream’s N s', async () => {
    const before = up.seen.filter((x) => x.url.startsWith('/api/v1/deploy')).length;
    const body = errorOf(await c.callTool('deploy', { uuid: 'app1' }));
    expect(body).toEqual({
      message: 'Deployment queue is full. Try again later.',
      retry_after: 60,
      hint: 'The upstream is busy: retry after 60 s (not retried automatically, because repeating a POST could make the change twice).',
    });
    expect(up.seen.filter((x) => x.url.startsWith('/api/v1/deploy')).length - before).toBe(1);
    // Coolify reads deploy's uuid from the query (and a body's would be dropped).
    const sent = up.seen.find((x) => x.url.startsWith('/api/v1/deploy'))!;
    expect({ url: sent.url, body: sent.body }).toEqual({ url: '/api/v1/deploy?uuid=app1', body: '' });
  });

  it("fields Coolify reads from a write's query go there, the rest in the body (restart_service's latest)", async () => {
    await c.callTool('restart_service', { uuid: 'svc1', latest: true });
    const sent = up.seen.filter((x) => x.url.startsWith('/api/v1/services/svc1/restart')).at(-1)!;
    expect({ method: sent.method, url: sent.url, body: sent.body }).toEqual({ method: 'POST', url: '/api/v1/services/svc1/restart?latest=true', body: '' });
  });

  it('"Deployment queue is full." on a GET: waits Retry-After (with progress), then answers', async () => {
    const progress: Array<{ message?: string }> = [];
    const r = await c.callTool('list_deployments', {}, (p) => progress.push(p));
    // An agent's list asks for a page of 10 unless it names a size.
    expect(r.structuredContent).toEqual({ items: [], total: 0, page: 1, per_page: 10 });
    expect(progress[0]?.message).toBe('Waiting 1 s for the upstream (server answered 429) before retrying list_deployments.');
  });

  it('upstream error bodies reach the agent as data, with secrets redacted and long bodies cut', async () => {
    const leaky = errorOf(await c.callTool('get_server', { uuid: 'leaky' }));
    expect(leaky.message).toBe('Server error.');
    expect(leaky.password).toBe('[redacted]');
    const text = JSON.stringify(leaky);
    for (const secret of [SECRET, 'hunter2', 'AnotherSecretValue99', 'plain-text-password']) expect(text).not.toContain(secret);
    expect(leaky.debug).toBe('request had Authorization: [redacted]; tried postgres://admin:[redacted]@db.internal:5432/coolify and token [redacted]');

    const huge = errorOf(await c.callTool('get_server', { uuid: 'huge' }));
    expect(huge.upstream_status).toBe(500);
    expect((huge.message as string).length).toBeLessThan(600);
    expect((huge.upstream_body as string).length).toBeLessThan(4_200);
    expect(huge.upstream_body).toMatch(/… \(truncated\)$/);

    const html = errorOf(await c.callTool('get_server', { uuid: 'html' }));
    expect(html).toEqual({ message: 'The upstream answered 502.', upstream_status: 502, upstream_body: '<html><body>Bad gateway for [redacted]</body></html>' });
  });

  it('input is validated before any request, with local mode’s error shape', async () => {
    const before = up.seen.length;
    const body = errorOf(await c.callTool('create_project', { name: 'ok name', extra: true }));
    expect(body).toEqual({ message: 'Validation error.', errors: { extra: ['This field is not allowed.'] }, hint: expect.stringContaining('describe_operation') });
    expect(up.seen.length).toBe(before);
  });

  it('only the configured token goes upstream, on every request', async () => {
    expect(up.seen.length).toBeGreaterThan(5);
    for (const x of up.seen) expect(x.authorization).toBe(`Bearer ${TOKEN}`);
    expect(c.stderr()).not.toContain(SECRET);
  });
});
