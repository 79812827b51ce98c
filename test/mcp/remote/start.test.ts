/**
 * `berth mcp --api-url`: the start-up probe (bad token, bad URL: a clear line on stderr, nothing
 * on stdout, a non-zero exit) and the tool list (what the token may do, what the upstream
 * offers, --read-only and --toolsets), compared with local mode for the same token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../../src/core/admin.js';
import { errorBody, stdioClient } from '../../helpers/mcp.js';
import { freePort } from '../../helpers/process.js';
import { call, startTestServer, type TestServer } from '../../helpers/server.js';
import { scriptedUpstream } from './fake-upstream.js';
import { remoteClient, remoteStart } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

// Several processes per case: room for a loaded machine, where one spawn alone can take seconds.
describe('start-up probe', { timeout: 90_000 }, () => {
  it('a good token: starts, logs on stderr only, exits 0 when stdin closes, never prints the token', async () => {
    const r = await remoteStart(s.url, { BERTH_TOKEN: s.rootToken });
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    expect(r.err).toContain('berth mcp ready on stdio (remote)');
    expect(r.err).not.toContain(s.rootToken.split('|')[1]!);
  });

  it('leaves nothing on the upstream: every probe is a read, so no audit entry (writes with a bogus body left two failed ones)', async () => {
    const entries = () => s.db.selectFrom('audit_log').select('id').execute();
    const before = (await entries()).length;
    for (const permissions of [['read'], ['read', 'write'], ['deploy'], ['root']]) {
      const r = await remoteStart(s.url, { BERTH_TOKEN: (await s.token({ permissions, role: 'admin' })).token });
      expect(r.code, r.err).toBe(0);
    }
    const r = await remoteStart(s.url, { BERTH_TOKEN: s.rootToken });
    expect(r.code, r.err).toBe(0);
    expect((await entries()).length).toBe(before);
  });

  it('a bad token: non-zero exit, the reason on stderr, nothing on stdout', async () => {
    for (const token of ['1|not-the-secret', 'garbage', `${s.rootToken}x`]) {
      const r = await remoteStart(`${s.url}/api/v1`, { BERTH_TOKEN: token });
      expect(r.code).not.toBe(0);
      expect(r.out).toBe('');
      expect(r.err).toBe(`berth: BERTH_TOKEN was refused by ${s.url}/api/v1: Invalid token.\n`);
    }
    const none = await remoteStart(s.url, {});
    expect(none.code).not.toBe(0);
    expect(none.out).toBe('');
    expect(none.err).toMatch(/^berth: set BERTH_TOKEN to an API token/);
  });

  it('a bad URL: nothing listening, not an API, not a URL — non-zero exit, the reason on stderr', async () => {
    const port = await freePort();
    const cases: Array<[string, RegExp]> = [
      [`http://127.0.0.1:${port}`, new RegExp(`^berth: cannot reach the upstream API at http://127\\.0\\.0\\.1:${port}/api/v1: .*ECONNREFUSED`)],
      [`${s.url}/nothing-here/`, /^berth: http:\/\/127\.0\.0\.1:\d+\/nothing-here\/api\/v1 does not look like a berth or Coolify API: GET \/api\/v1\/version answered HTTP 404 \(is the URL right\?\)/],
      ['not a url', /^berth: --api-url "not a url" is not a URL/],
      ['ftp://example.test', /^berth: --api-url must be an http:\/\/ or https:\/\/ URL/],
      [`http://user:pw@127.0.0.1:${port}`, /^berth: --api-url must not carry credentials/],
    ];
    // Each case is its own process: started together, as each spawn takes seconds on a loaded machine.
    const runs = await Promise.all(cases.map(([url]) => remoteStart(url, { BERTH_TOKEN: s.rootToken })));
    for (const [i, [url, message]] of cases.entries()) {
      const r = runs[i]!;
      expect(r.code, url).not.toBe(0);
      expect(r.out, url).toBe('');
      expect(r.err, url).toMatch(message);
      expect(r.err.trim().split('\n'), url).toHaveLength(1);
    }
    // A web page that answers 200 to everything is not an API either.
    const web = await scriptedUpstream({ 'GET /api/v1/version': () => ({ status: 200, text: '<!doctype html><title>Welcome</title>' }) });
    try {
      const r = await remoteStart(web.url, { BERTH_TOKEN: s.rootToken });
      expect(r.code).not.toBe(0);
      expect(r.out).toBe('');
      expect(r.err).toMatch(/does not look like a berth or Coolify API: GET \/api\/v1\/version answered text\/plain; charset=utf-8 that is not a version number/);
    } finally {
      await web.close();
    }
  });

  it('BERTH_API_URL works like --api-url', async () => {
    const bad = await remoteStart(undefined, { BERTH_API_URL: s.url, BERTH_TOKEN: '1|wrongsecret' });
    expect(bad.code).not.toBe(0);
    expect(bad.err).toBe(`berth: BERTH_TOKEN was refused by ${s.url}/api/v1: Invalid token.\n`);
    const good = await remoteStart(undefined, { BERTH_API_URL: s.url, BERTH_TOKEN: s.rootToken });
    expect(good.code).toBe(0);
    expect(good.err).toContain('berth mcp ready on stdio (remote)');
  });
});

describe('the tool list', () => {
  const names = async (c: { listTools(): Promise<{ tools: Array<{ name: string }> }>; close(): Promise<void> }) => {
    try {
      return (await c.listTools()).tools.map((t) => t.name);
    } finally {
      await c.close();
    }
  };

  it('is what the token may do, exactly as in local mode (permissions learned from berth without side effects)', async () => {
    const neighbour = await s.team('Neighbours');
    const tokens: Array<[string, string]> = [
      ['read', (await s.token({ permissions: ['read'] })).token],
      ['read:sensitive', (await s.token({ permissions: ['read:sensitive'] })).token],
      ['write', (await s.token({ permissions: ['write'] })).token],
      ['deploy', (await s.token({ permissions: ['deploy'] })).token],
      ['read,deploy', (await s.token({ permissions: ['read', 'deploy'] })).token],
      ['root of another team', neighbour.rootToken],
      ['root of the root team', s.rootToken],
    ];
    const before = (await call(s.url, 'GET', '/api/v1/projects', { token: s.rootToken })).json.length;
    for (const [label, token] of tokens) {
      // Both sessions start together (an `await` inside the array would start the second only once the first is up).
      const [remote, local] = await Promise.all([remoteClient('v2-legacy', s.url, token).then(names), stdioClient('v2-legacy', s.dataDir, token).then(names)]);
      expect({ label, remote }).toEqual({ label, remote: local });
    }
    // The probes changed nothing.
    expect((await call(s.url, 'GET', '/api/v1/projects', { token: s.rootToken })).json.length).toBe(before);
    // 14 sessions listing every tool: ~60 s on a loaded 2-core machine, ~120 s on an overloaded one.
  }, 180_000);

  it('a tool the token may not use answers what it needs, as in local mode (the upstream refuses it; read-only refuses locally)', async () => {
    const reader = (await s.token({ permissions: ['read'] })).token;
    const c = await remoteClient('v2-legacy', s.url, reader);
    try {
      const direct = errorBody(await c.callTool('update_settings', { allowed_ips: '' }));
      expect(direct).toMatchObject({ message: 'Missing required permissions: root', missing_permissions: ['root'] });
      const viaCall = errorBody(await c.callTool('create_project', { name: 'remote-refused' }));
      expect(viaCall).toMatchObject({ missing_permissions: ['write'] });
    } finally {
      await c.close();
    }
    const ro = await remoteClient('v1', s.url, s.rootToken, ['--read-only']);
    try {
      expect(errorBody(await ro.callTool('create_project', { name: 'remote-ro' }))).toMatchObject({ missing_permissions: ['write'], hint: expect.stringContaining('read-only') });
    } finally {
      await ro.close();
    }
    const projects = (await call(s.url, 'GET', '/api/v1/projects', { token: s.rootToken })).json.map((p: { name: string }) => p.name);
    expect(projects).not.toContain('remote-refused');
    expect(projects).not.toContain('remote-ro');
  }, 60_000);

  it("a role change reaches remote mode at the next call: a demoted admin's root token loses root, and regains it", async () => {
    const email = `remote-demoted-${Date.now()}@example.test`;
    const t = await s.token({ permissions: ['read', 'root'], role: 'admin', email });
    const c = await remoteClient('v2-modern', s.url, t.token);
    try {
      expect((await c.callTool('get_settings')).isError).toBeFalsy();
      await admin.addMember(s.db, { team: String(s.rootTeamId), email, role: 'member' });
      expect(errorBody(await c.callTool('get_settings'))).toMatchObject({ missing_permissions: ['root'] });
      await admin.addMember(s.db, { team: String(s.rootTeamId), email, role: 'admin' });
      expect((await c.callTool('get_settings')).isError).toBeFalsy();
    } finally {
      await c.close();
    }
  }, 60_000);

  it('--read-only and --toolsets narrow it as in local mode', async () => {
    const remoteLists = new Map<string, string[]>();
    for (const args of [['--read-only'], ['--toolsets', 'servers,feedback'], ['--read-only', '--toolsets', 'settings'], ['--toolsets', 'default']]) {
      const [remote, local] = await Promise.all([remoteClient('v1', s.url, s.rootToken, args).then(names), stdioClient('v1', s.dataDir, s.rootToken, args).then(names)]);
      expect({ args, remote }).toEqual({ args, remote: local });
      remoteLists.set(args.join(' '), remote);
    }
    // The session above with these arguments, not a second one: a spawn is seconds on a loaded machine.
    expect(remoteLists.get('--read-only --toolsets settings')).toEqual(['get_settings', 'list_toolsets', 'enable_toolsets', 'describe_operation', 'call_operation']);
  }, 120_000);

  it('hides the tools an upstream does not offer, when it publishes its operations (OpenAPI)', async () => {
    const op = (permission: string) => ({ 'x-berth-permission': permission, responses: {} });
    const up = await scriptedUpstream({
      'GET /api/v1/version': () => ({ text: '0.0.9' }),
      'GET /api/v1/teams/current': () => ({ body: { id: 1, name: 'T', description: null, personal_team: false, created_at: 'x', updated_at: 'x' } }),
      'GET /api/v1/openapi.json': () => ({
        body: {
          openapi: '3.1.0',
          paths: {
            '/api/v1/version': { get: op('read') },
            '/api/v1/teams/current': { get: op('read') },
            '/api/v1/projects': { get: op('read'), post: op('write') },
          },
        },
      }),
    });
    try {
      const list = await names(await remoteClient('v2-legacy', up.url, '1|abcdefghijkl'));
      expect(list.sort()).toEqual(['create_project', 'get_current_team', 'get_version', 'list_projects']);
    } finally {
      await up.close();
    }
  });

  it('an upstream with the API turned off: starts with a warning, and tools report the refusal plainly', async () => {
    await call(s.url, 'POST', '/api/v1/disable', { token: s.rootToken });
    try {
      const c = await remoteClient('v2-legacy', s.url, s.rootToken, [], { LOG_LEVEL: 'warn' });
      try {
        const r = await c.callTool('get_current_team');
        expect(r.isError).toBe(true);
        expect(JSON.parse(r.content[0]!.text!)).toEqual({ message: 'API is disabled.', hint: expect.stringContaining('enable_api') });
        expect((await c.callTool('enable_api')).structuredContent).toEqual({ message: 'API enabled.' });
        expect((await c.callTool('get_current_team')).isError).toBeFalsy();
        expect(c.stderr()).toContain('the upstream refuses this token: API is disabled.');
      } finally {
        await c.close();
      }
    } finally {
      await call(s.url, 'POST', '/api/v1/enable', { token: s.rootToken });
    }
  });
});
