/**
 * Remote mode against a real, rate-limited berth (low API_RATE_LIMIT, a 6 s window): a GET tool
 * waits Retry-After (reporting progress) and succeeds; a POST tool is never retried; past the
 * wait bound a GET gives up with "retry after N s"; an upstream that goes away mid-session is a
 * tool error, and the session carries on when it is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../../helpers/server.js';
import { countingProxy } from './fake-upstream.js';
import { CLIENT_KINDS } from '../../helpers/mcp.js';
import { remoteClient } from './helpers.js';

/**
 * Each session lists only the toolsets its calls need: these tests are about waits and retries, and
 * listing all ~250 tools costs a session seconds of CPU (a v1 client compiles every output schema).
 */
const TEAMS = ['--toolsets', 'teams'];

const errorOf = (r: { isError?: boolean; content: Array<{ text?: string }> }) => {
  expect(r.isError).toBe(true);
  return JSON.parse(r.content[0]!.text!) as Record<string, unknown>;
};

/** Spends the rest of the token's window (the same user's bucket the remote client draws on). */
async function exhaust(s: TestServer, token: string): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const r = await call(s.url, 'GET', '/api/v1/teams/current', { token });
    if (r.status === 429) return Number(r.headers['retry-after']);
  }
  throw new Error('never rate limited');
}

/** Waits for a fresh window and spends all of it, so the next request waits most of a window. */
async function exhaustFresh(s: TestServer, token: string): Promise<number> {
  const first = await exhaust(s, token);
  await new Promise((res) => setTimeout(res, first * 1000 + 100));
  return exhaust(s, token);
}

// Concurrent: each case spends its own user's bucket (a token per case, a user per token), so the
// cases' waits for a fresh window and for Retry-After overlap instead of adding up (~40 s of sleep).
describe.concurrent('429 from a real berth (8 requests per 6 s window)', () => {
  let s: TestServer;
  beforeAll(async () => {
    // A window long enough that a loaded machine still makes the call inside the spent one.
    s = await startTestServer({ apiRateLimit: 8, rateWindowMs: 6_000 });
  });
  afterAll(() => s.stop());

  it.for(CLIENT_KINDS)(
    'a GET tool waits Retry-After, reports progress while it waits, then succeeds (%s client)',
    // Four cases at once: room for a loaded machine (they take ~15 s on an idle one).
    { timeout: 120_000 },
    async (kind, { expect }) => {
      const t = await s.token({ permissions: ['read', 'write'] });
      const c = await remoteClient(kind, s.url, t.token, TEAMS);
      try {
        // Ready (probe done) before the budget is spent: a modern client connects without a round trip.
        expect((await c.listTools()).tools.length).toBeGreaterThan(0);
        const retryAfter = await exhaustFresh(s, t.token);
        expect(retryAfter).toBeGreaterThanOrEqual(2);
        const progress: Array<{ progress: number; message?: string }> = [];
        const started = Date.now();
        const r = await c.callTool('get_current_team', {}, (p) => progress.push(p));
        const took = Date.now() - started;
        expect(r.isError).toBeFalsy();
        expect(r.structuredContent).toMatchObject({ id: s.rootTeamId, name: 'Root Team' });
        expect(took).toBeGreaterThanOrEqual(1_500);
        expect(progress.length).toBeGreaterThanOrEqual(1);
        expect(progress[0]!.message).toMatch(/^Waiting \d+ s for the upstream \(server answered 429\) before retrying get_current_team\.$/);
        for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
      } finally {
        await c.close();
      }
    },
  );

  it('a POST tool is not retried: the error says retry after N s, and the upstream saw the request once', async ({ expect }) => {
    const t = await s.token({ permissions: ['read', 'write'] });
    const proxy = await countingProxy(s.url);
    const c = await remoteClient('v1', proxy.url, t.token, ['--toolsets', 'projects']);
    try {
      proxy.seen.length = 0; // forget the start-up probe
      // A fresh window, all spent: the call lands well inside it even on a loaded machine (the
      // probe's window may be nearly over by now, and the POST would then simply go through).
      await exhaustFresh(s, t.token);
      const progress: unknown[] = [];
      const r = await c.callTool('create_project', { name: 'never twice' }, (p) => progress.push(p));
      const body = errorOf(r);
      expect(body.message).toBe('Too many requests.');
      expect(body.retry_after).toEqual(expect.any(Number));
      expect(body.retry_after as number).toBeGreaterThanOrEqual(1);
      expect(body.hint).toMatch(new RegExp(`retry after ${body.retry_after} s \\(not retried automatically`));
      expect(progress).toEqual([]);
      // Still one POST once the window has passed: nothing retried it behind the agent's back.
      await new Promise((res) => setTimeout(res, (body.retry_after as number) * 1000 + 300));
      expect(proxy.seen.filter((x) => x.method === 'POST' && x.url === '/api/v1/projects')).toHaveLength(1);
      const projects = await call(s.url, 'GET', '/api/v1/projects', { token: s.rootToken });
      expect(projects.json.map((p: { name: string }) => p.name)).not.toContain('never twice');
      // The agent's own retry, after the wait, goes through.
      const again = await c.callTool('create_project', { name: 'never twice' });
      expect(again.isError).toBeFalsy();
      expect(again.structuredContent).toEqual({ uuid: expect.any(String) });
    } finally {
      await c.close();
      await proxy.close();
    }
  }, 120_000);
});

describe('past the wait bound', () => {
  let s: TestServer;
  beforeAll(async () => {
    // 8 an hour: a Retry-After of minutes, far past the 20 s bound, so "at once" is told from "waited" on any machine.
    s = await startTestServer({ apiRateLimit: 8, rateWindowMs: 3_600_000 });
  });
  afterAll(() => s.stop());

  it('a GET tool whose Retry-After exceeds BERTH_API_MAX_WAIT_MS gives up at once with "retry after N s"', async () => {
    const t = await s.token({ permissions: ['read'] });
    const c = await remoteClient('v2-legacy', s.url, t.token, ['--toolsets', 'projects'], { BERTH_API_MAX_WAIT_MS: '20000' });
    try {
      expect((await c.listTools()).tools.length).toBeGreaterThan(0);
      await exhaust(s, t.token);
      const started = Date.now();
      const body = errorOf(await c.callTool('list_projects'));
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(body.message).toBe('Too many requests.');
      expect(body.retry_after as number).toBeGreaterThan(20);
      expect(body.hint).toMatch(/^The upstream is busy: retry after \d+ s \(gave up: one call waits at most BERTH_API_MAX_WAIT_MS, over a few tries\)\.$/);
    } finally {
      await c.close();
    }
  });
});

describe('upstream down mid-session', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('a clear tool error (GET and POST), no crash, and calls work again once the upstream is back', async () => {
    const proxy = await countingProxy(s.url);
    const c = await remoteClient('v2-modern', proxy.url, s.rootToken, ['--toolsets', 'teams,projects']);
    try {
      expect((await c.callTool('get_current_team')).isError).toBeFalsy();
      await proxy.down();
      const get = errorOf(await c.callTool('get_current_team'));
      expect(get.message).toBe(`The upstream ${proxy.url}/api/v1 could not be reached.`);
      expect(get.error).toMatch(/ECONNREFUSED/);
      const post = errorOf(await c.callTool('create_project', { name: 'while down' }));
      expect(post.message).toBe(`The upstream ${proxy.url}/api/v1 could not be reached.`);
      // Refused before anything was sent, so the agent is not told the change may have happened.
      expect(post.hint).toBeUndefined();
      expect(JSON.stringify([get, post])).not.toContain(s.rootToken.split('|')[1]!);
      // The server process is alive and answers.
      expect((await c.listTools()).tools.length).toBeGreaterThan(0);
      await proxy.up();
      expect((await c.callTool('get_current_team')).structuredContent).toMatchObject({ id: s.rootTeamId });
      expect(c.stderr()).not.toContain(s.rootToken.split('|')[1]!);
    } finally {
      await c.close();
      await proxy.close();
    }
  }, 30_000);
});
