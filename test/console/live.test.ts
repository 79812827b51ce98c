/**
 * The console's live views over real HTTP: pages and their server-sent event streams, limited to
 * the person's teams (another team's uuid answers like a missing one), signed-in only, updated
 * by real operations (REST calls whose deployments and migrations run on berth's own jobs), and
 * closed when the session ends. Runs on both stores (BERTH_TEST_STORE).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_TIMING, logChange, STREAMS_PER_SESSION } from '../../src/console/live/stream.js';
import { LOG_CHARS } from '../../src/console/live/views.js';
import { RECORD_ONLY_NOTE } from '../../src/core/runtime.js';
import { browse, signInByLink, type ConsoleSession } from '../helpers/console.js';
import { openSse } from '../helpers/sse.js';
import { until } from '../helpers/wait.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let owner: ConsoleSession;
const mine = { app: '', db: '', deployment: '', migration: '', server: '', dest2: '', project: '' };
const theirs = { app: '', deployment: '', migration: '' };
const saved = { ...LIVE_TIMING };

async function ok(token: string, method: string, path: string, body?: unknown) {
  const r = await call(s.url, method, `/api/v1${path}`, { token, body });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.json;
}

/** A team's records on two record-only servers: an app with a secret variable, a database, a deployment, a migration. */
async function platform(token: string, tag: string) {
  const server = (await ok(token, 'POST', '/servers', { name: `${tag}-one`, ip: '10.0.0.1' })).uuid;
  const server2 = (await ok(token, 'POST', '/servers', { name: `${tag}-two`, ip: '10.0.0.2' })).uuid;
  const dest2 = (await ok(token, 'GET', `/servers/${server2}/destinations`))[0].uuid;
  const project = (await ok(token, 'POST', '/projects', { name: `${tag} project` })).uuid;
  const place = { project_uuid: project, server_uuid: server, environment_name: 'production' };
  const app = (await ok(token, 'POST', '/applications/dockerimage', { ...place, name: `${tag}-web`, docker_registry_image_name: 'nginx', docker_registry_image_tag: '1.27', ports_exposes: '80' }))
    .uuid;
  await ok(token, 'POST', `/applications/${app}/envs`, { key: 'API_KEY', value: `${tag}-app-secret-value` });
  const db = (await ok(token, 'POST', '/databases/postgresql', { ...place, name: `${tag}-db`, postgres_password: `${tag}-db-secret-password` })).uuid;
  const deployment = (await ok(token, 'POST', `/deploy?uuid=${app}`)).deployments[0].deployment_uuid;
  const migration = (await ok(token, 'POST', `/databases/${db}/migrate`, { destination_uuid: dest2 })).migration_uuid;
  return { server, dest2, project, app, db, deployment, migration };
}

beforeAll(async () => {
  // Short intervals so a test sees several polls and heartbeats (read when a stream opens).
  Object.assign(LIVE_TIMING, { pollMs: 100, heartbeatMs: 250 });
  s = await startTestServer();
  owner = await signInByLink(s.url, s.db, s.ownerEmail);
  Object.assign(mine, await platform(s.rootToken, 'mine'));
  const other = await s.team('Other');
  Object.assign(theirs, await platform(other.rootToken, 'theirs'));
}, 60_000);
let stopped = false;
afterAll(async () => {
  Object.assign(LIVE_TIMING, saved);
  if (!stopped) await s?.stop();
});

describe('live pages and streams', () => {
  it('need a sign-in: pages send to the sign-in page, streams answer 401', async () => {
    for (const path of ['/resources', `/resources/${mine.app}`, `/deployments/${mine.deployment}`, `/migrations/${mine.migration}`]) {
      const page = await call(s.url, 'GET', path);
      expect(page.status).toBe(303);
      expect(page.headers.location).toBe(`/login?next=${encodeURIComponent(path)}`);
      const events = await call(s.url, 'GET', `${path}/events`, { headers: { accept: 'text/event-stream' } });
      expect(events.status).toBe(401);
      expect(events.headers['content-type']).not.toContain('text/event-stream');
    }
  });

  it("another team's uuid answers exactly like a missing one, page and stream", async () => {
    for (const [kind, other] of [
      ['resources', theirs.app],
      ['deployments', theirs.deployment],
      ['migrations', theirs.migration],
    ] as const) {
      const missing = 'x'.repeat(other.length);
      for (const suffix of ['', '/events']) {
        const a = await browse(s.url, owner.jar, 'GET', `/${kind}/${other}${suffix}`);
        const b = await browse(s.url, owner.jar, 'GET', `/${kind}/${missing}${suffix}`);
        expect(a.status).toBe(404);
        expect(b.status).toBe(404);
        expect(a.text.replaceAll(other, 'U')).toBe(b.text.replaceAll(missing, 'U'));
      }
    }
    // The list shows only the person's teams.
    const list = await browse(s.url, owner.jar, 'GET', '/resources');
    expect(list.status).toBe(200);
    expect(list.text).toContain('mine-web');
    expect(list.text).not.toContain('theirs-web');
    const sse = await openSse(`${s.url}/resources/events`, owner.cookie);
    const first = await sse.next((e) => e.event === 'state');
    sse.close();
    expect(first.data.tables.resources.map((r: { cells: string[] }) => r.cells[0]).sort()).toEqual(['mine-db', 'mine-web']);
  });

  it('the resource list streams changes made through the API: a new resource, then its new name', async () => {
    const sse = await openSse(`${s.url}/resources/events`, owner.cookie);
    expect(sse.status).toBe(200);
    expect(sse.contentType).toContain('text/event-stream');
    await sse.next((e) => e.event === 'state');
    const place = { project_uuid: mine.project, server_uuid: mine.server, environment_name: 'production' };
    const app = (
      await ok(s.rootToken, 'POST', '/applications/dockerimage', { ...place, name: 'late-web', docker_registry_image_name: 'nginx', docker_registry_image_tag: '1.27', ports_exposes: '80' })
    ).uuid;
    const row = (e: { event: string; data: any }) => e.event === 'state' && e.data.tables.resources.find((r: { id: string }) => r.id === app);
    const added = row(await sse.next((e) => Boolean(row(e))));
    expect(added.href).toBe(`/resources/${app}`);
    expect(added.cells[0]).toBe('late-web');
    // (Its status changes only with an engine's: test/console/live-browser.test.ts.)
    await ok(s.rootToken, 'PATCH', `/applications/${app}`, { name: 'later-web' });
    await sse.next((e) => row(e)?.cells[0] === 'later-web');
    // Heartbeats keep an idle stream open.
    await until('a heartbeat', () => sse.raw().includes(': heartbeat\n\n'), 5_000);
    sse.close();
  });

  it('a resource page lists its deployments as they are queued; a deployment page streams status and log, then ends', async () => {
    const res = await openSse(`${s.url}/resources/${mine.app}/events`, owner.cookie);
    await res.next((e) => e.event === 'state');
    const d = (await ok(s.rootToken, 'POST', `/deploy?uuid=${mine.app}`)).deployments[0].deployment_uuid;
    await res.next((e) => e.event === 'state' && e.data.tables.deployments.some((r: { id: string; cells: string[] }) => r.id === d && r.cells[2] === 'failed'));
    res.close();

    const sse = await openSse(`${s.url}/deployments/${d}/events`, owner.cookie);
    const state = await sse.next((e) => e.event === 'state');
    // Record-only servers: nothing ran, so the deployment failed, and its log says why.
    expect(state.data.text.status).toBe('failed');
    const log = await sse.next((e) => e.event === 'log');
    expect(log.data.reset).toContain(RECORD_ONLY_NOTE);
    expect((await sse.next((e) => e.event === 'end')).data).toEqual({ reason: 'finished' });
    await sse.ended;
    // Nothing secret in any stream: no variable values, passwords, session or CSRF tokens.
    const page = await browse(s.url, owner.jar, 'GET', `/deployments/${d}`);
    expect(page.text).toContain(RECORD_ONLY_NOTE);
    expect(page.text).toContain(`data-live-src="/deployments/${d}/events"`);
    for (const text of [sse.raw(), JSON.stringify(res.events)]) {
      for (const secret of ['mine-app-secret-value', 'mine-db-secret-password', owner.csrf, ...owner.jar.cookies.values()]) expect(text).not.toContain(secret);
    }
  });

  it('a migration page shows phase, bytes and downtime as the migration job recorded them', async () => {
    const sse = await openSse(`${s.url}/migrations/${mine.migration}/events`, owner.cookie);
    const state = await sse.next((e) => e.event === 'state');
    const row = await s.db.selectFrom('migrations_jobs').selectAll().where('uuid', '=', mine.migration).executeTakeFirstOrThrow();
    expect(state.data.text.status).toBe(row.status);
    expect(state.data.text.phase).toBe((JSON.parse(row.progress) as { phase?: string }).phase ?? '—');
    expect(state.data.text.downtime).toBe(row.downtime_ms === null ? '—' : `${(row.downtime_ms / 1000).toFixed(1)} s`);
    expect(state.data.tables.resource[0].id).toBe(mine.db);
    expect((await sse.next((e) => e.event === 'end')).data).toEqual({ reason: 'finished' });
    const page = await browse(s.url, owner.jar, 'GET', `/migrations/${mine.migration}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Bytes copied');
    expect(page.headers['content-security-policy']).toContain("connect-src 'self'");
  });

  it('a stream ends when its session is signed out, and when its person leaves the team', async () => {
    const session = await signInByLink(s.url, s.db, s.ownerEmail);
    const sse = await openSse(`${s.url}/resources/events`, session.cookie);
    await sse.next((e) => e.event === 'state');
    const out = await browse(s.url, session.jar, 'POST', '/logout', { _csrf: session.csrf });
    expect(out.status).toBe(303);
    expect((await sse.next((e) => e.event === 'end')).data).toEqual({ reason: 'signed-out' });
    await sse.ended;

    const email = `leaver-${Date.now()}@example.test`;
    await s.token({ permissions: ['read'], email, role: 'member' });
    const leaver = await signInByLink(s.url, s.db, email);
    const place = { project_uuid: mine.project, server_uuid: mine.server, environment_name: 'production' };
    const app = (await ok(s.rootToken, 'POST', '/applications/dockerimage', { ...place, name: 'watched', docker_registry_image_name: 'nginx', docker_registry_image_tag: '1.27', ports_exposes: '80' }))
      .uuid;
    const watched = await openSse(`${s.url}/resources/${app}/events`, leaver.cookie);
    await watched.next((e) => e.event === 'state');
    const u = await s.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
    const removed = await browse(s.url, owner.jar, 'POST', `/teams/${s.rootTeamId}/members/${u.id}/remove`, { _csrf: owner.csrf });
    expect(removed.status).toBe(303);
    expect((await watched.next((e) => e.event === 'end')).data).toEqual({ reason: 'gone' });
    await watched.ended;
  });

  it('sends a log as the part that grew, or its tail whole when its start was cut', () => {
    const first = logChange(undefined, 'a\n');
    expect(first.change).toEqual({ reset: 'a\n' });
    const grew = logChange(first.mark, 'a\nb\n');
    expect(grew.change).toEqual({ append: 'b\n' });
    expect(logChange(grew.mark, 'a\nb\n').change).toBeNull();
    expect(logChange(grew.mark, 'b\nc\n').change).toEqual({ reset: 'b\nc\n' });
    // A long log: its tail at first, then only additions, even once it is longer than the tail.
    const long = 'x'.repeat(LOG_CHARS + 500);
    const start = logChange(undefined, long);
    expect((start.change as { reset: string }).reset.endsWith('x'.repeat(LOG_CHARS))).toBe(true);
    expect((start.change as { reset: string }).reset).toContain('500 earlier characters cut');
    expect(logChange(start.mark, `${long}more\n`).change).toEqual({ append: 'more\n' });
  });

  it('one session holds at most STREAMS_PER_SESSION streams; a closed one frees its place', async () => {
    const session = await signInByLink(s.url, s.db, s.ownerEmail);
    const held = await Promise.all(Array.from({ length: STREAMS_PER_SESSION }, () => openSse(`${s.url}/resources/events`, session.cookie)));
    expect(held.map((h) => h.status)).toEqual(held.map(() => 200));
    const refused = await browse(s.url, session.jar, 'GET', '/resources/events');
    expect(refused.status).toBe(429);
    held[0]!.close();
    await until('the place to free', async () => {
      const again = await openSse(`${s.url}/resources/events`, session.cookie);
      again.close();
      return again.status === 200;
    });
    for (const h of held) h.close();
  });

  // Last: it stops the server.
  it('closing the server ends its open streams (an open one would hold the close)', async () => {
    const sse = await openSse(`${s.url}/resources/events`, owner.cookie);
    await sse.next((e) => e.event === 'state');
    stopped = true;
    await s.stop();
    expect((await sse.next((e) => e.event === 'end')).data).toEqual({ reason: 'shutdown' });
    await sse.ended;
  });
});
