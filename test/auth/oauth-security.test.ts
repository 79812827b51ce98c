/**
 * The authorization server's refusals, against a real `berth serve` over HTTP: PKCE missing or
 * wrong, redirect URI mismatch, tokens for another audience, replayed codes and refresh tokens,
 * expired and revoked grants, CSRF on the consent form, a member asking for root, and the 403
 * insufficient_scope a client can step up from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { loadConfig } from '../../src/config/config.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';
import { atLocalhost, Browser, consentForm, pkce, signIn, type Page } from '../helpers/oauth.js';
import { browse, csrfOf, signInByLink } from '../helpers/console.js';
import { approvalsFor } from '../../src/auth/oauth/approvals.js';

const REDIRECT = 'http://127.0.0.1:9/cb';
const ACCEPT = { accept: 'application/json, text/event-stream' };

let server: TestServer;
let short: TestServer;
let owner: string;
const member = 'member@example.test';
let memberId: number;

beforeAll(async () => {
  [server, short] = (
    await Promise.all([
      startTestServer(),
      // Lifetimes short enough to watch them end: access tokens 2 s, grants 5 s. Expiry is in whole
      // seconds (a 1 s token issued late in a second lived a few ms: the first use failed).
      startTestServer({ oauthAccessTtlS: 2, oauthGrantTtlS: 5 }),
    ])
  ).map(atLocalhost) as [TestServer, TestServer];
  owner = server.ownerEmail;
  await server.token({ permissions: ['read'], email: member, role: 'member' });
  memberId = await userId(server, member);
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.stop(), short?.stop()]);
});

async function userId(s: TestServer, email: string): Promise<number> {
  return (await s.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id;
}

const form = (fields: Record<string, string>) => ({ body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

async function register(s: TestServer, name = 'Sec Client'): Promise<string> {
  const r = await call(s.url, 'POST', '/oauth/register', {
    body: { client_name: name, redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.client_id;
}

function authUrl(s: TestServer, clientId: string, challenge: string, extra: Record<string, string | null> = {}): string {
  const u = new URL('/oauth/authorize', s.url);
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    scope: 'read write',
    state: 'state-42',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: `${s.url}/mcp`,
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
  return u.toString();
}

/** A signed-in browser at the consent page of a fresh authorization request. */
async function consentPageFor(s: TestServer, user: string, clientId: string, extra: Record<string, string | null> = {}) {
  const pk = pkce();
  const browser = new Browser(s.url);
  await signIn(browser, s.db, user);
  const page = await browser.go('GET', authUrl(s, clientId, pk.challenge, extra));
  return { browser, page, pk };
}

async function approve(s: TestServer, browser: Browser, page: Page, permissions?: string[]): Promise<Page> {
  const f = consentForm(page);
  const fields = new URLSearchParams([['csrf', f.csrf], ['team', f.team], ['decision', 'approve'], ...(permissions ?? f.checked).map((p) => ['permission', p] as [string, string])]);
  return browser.go('POST', new URL(f.action, s.url).toString(), fields);
}

async function exchange(s: TestServer, clientId: string, code: string, verifier: string): Promise<Reply> {
  return call(s.url, 'POST', '/oauth/token', form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }));
}

async function refresh(s: TestServer, clientId: string, token: string): Promise<Reply> {
  return call(s.url, 'POST', '/oauth/token', form({ grant_type: 'refresh_token', refresh_token: token, client_id: clientId }));
}

/** Consent as shown (or with the given permissions), then the code exchanged: the token answer. */
async function tokensFor(s: TestServer, user: string, clientId: string, permissions?: string[], extra: Record<string, string | null> = {}) {
  const { browser, page, pk } = await consentPageFor(s, user, clientId, extra);
  const back = await approve(s, browser, page, permissions);
  expect(back.location?.startsWith(REDIRECT), back.text.slice(0, 300)).toBe(true);
  const q = new URL(back.location!).searchParams;
  expect(q.get('state')).toBe('state-42');
  const t = await exchange(s, clientId, q.get('code')!, pk.verifier);
  expect(t.status, t.text).toBe(200);
  return t.json as { access_token: string; refresh_token: string; scope: string; token_type: string };
}

const listTools = (s: { url: string }, token: string) => call(s.url, 'POST', '/mcp', { token, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: ACCEPT });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('authorization requests', () => {
  it('refuses a request without PKCE, or with the plain method', async () => {
    const clientId = await register(server);
    const browser = new Browser(server.url);
    await signIn(browser, server.db, owner);
    for (const extra of [{ code_challenge: null, code_challenge_method: null }, { code_challenge_method: 'plain' }] as Record<string, string | null>[]) {
      const page = await browser.go('GET', authUrl(server, clientId, pkce().challenge, extra));
      expect(page.location?.startsWith(REDIRECT)).toBe(true);
      const q = new URL(page.location!).searchParams;
      expect(q.get('error')).toBe('invalid_request');
      expect(q.get('code')).toBeNull();
      expect(q.get('state')).toBe('state-42');
    }
  });

  it('never redirects to a redirect URI that was not registered exactly', async () => {
    const clientId = await register(server);
    const browser = new Browser(server.url);
    await signIn(browser, server.db, owner);
    for (const uri of ['http://127.0.0.1:9/cb/', 'http://127.0.0.1:9/cb?x=1', 'http://evil.example/cb', 'http://127.0.0.1:10/cb']) {
      const page = await browser.go('GET', authUrl(server, clientId, pkce().challenge, { redirect_uri: uri }));
      expect(page.status).toBe(400);
      expect(page.location).toBeUndefined();
    }
  });

  it('refuses a resource other than /mcp', async () => {
    const clientId = await register(server);
    const { page } = await consentPageFor(server, owner, clientId, { resource: 'https://other.example/mcp' });
    expect(new URL(page.location!).searchParams.get('error')).toBe('invalid_target');
  });

  it('sends a denial back as access_denied with the state', async () => {
    const clientId = await register(server);
    const { browser, page } = await consentPageFor(server, owner, clientId);
    const f = consentForm(page);
    const back = await browser.go('POST', new URL(f.action, server.url).toString(), new URLSearchParams({ csrf: f.csrf, team: f.team, decision: 'deny' }));
    const q = new URL(back.location!).searchParams;
    expect(q.get('error')).toBe('access_denied');
    expect(q.get('state')).toBe('state-42');
    expect(q.get('code')).toBeNull();
  });

  it('sends a person who is not signed in to the login page, and back', async () => {
    const clientId = await register(server);
    const browser = new Browser(server.url);
    const start = await browser.send('GET', authUrl(server, clientId, pkce().challenge));
    expect(start.location).toMatch(new RegExp(`^${server.url}/oauth/consent/`));
    const page = await browser.send('GET', start.location!);
    expect(page.status).toBe(303);
    expect(page.location).toBe(`${server.url}/login?next=${encodeURIComponent(new URL(start.location!).pathname)}`);
  });
});

describe('the consent form', () => {
  it("refuses a post without the CSRF token, with another person's, or from another browser", async () => {
    const clientId = await register(server);
    const { browser, page } = await consentPageFor(server, owner, clientId);
    const f = consentForm(page);
    const url = new URL(f.action, server.url).toString();
    const post = (b: Browser, csrf: string | null) => {
      const fields = new URLSearchParams({ team: f.team, decision: 'approve', permission: 'read' });
      if (csrf !== null) fields.set('csrf', csrf);
      return b.send('POST', url, fields);
    };
    expect((await post(browser, null)).status).toBe(403);
    expect((await post(browser, 'x'.repeat(43))).status).toBe(403);
    // The member's own consent page has a token; it does not work for the owner's request.
    const other = await consentPageFor(server, member, clientId);
    expect((await post(browser, consentForm(other.page).csrf)).status).toBe(403);
    // A cross-site post carries no interaction cookie (SameSite=Lax): the request is unknown.
    const stranger = new Browser(server.url);
    await signIn(stranger, server.db, owner);
    const r = await post(stranger, f.csrf);
    expect(r.status).toBe(400);
    expect(r.location).toBeUndefined();
    // Nothing was approved by any of these.
    expect((await admin.listTokens(server.db, String(server.rootTeamId))).filter((t) => t.oauth_client_id === clientId)).toEqual([]);
    // The real form still works.
    const ok = await approve(server, browser, page);
    expect(new URL(ok.location!).searchParams.get('code')).toBeTruthy();
  });

  it('gives a member at most their role: root is not offered, and a forged root is dropped', async () => {
    const clientId = await register(server, 'Greedy Client');
    const { browser, page, pk } = await consentPageFor(server, member, clientId, { scope: 'read root' });
    const f = consentForm(page);
    expect(f.disabled).toEqual(['root']);
    expect(f.checked).toEqual(['read']);
    const back = await approve(server, browser, page, ['read', 'root']);
    const t = await exchange(server, clientId, new URL(back.location!).searchParams.get('code')!, pk.verifier);
    expect(t.json.scope).toBe('read');
    const row = (await admin.listTokens(server.db, String(server.rootTeamId))).find((r) => r.oauth_client_id === clientId)!;
    expect(row.permissions).toEqual(['read']);
    expect(row.name).toBe('Greedy Client');
  });

  it('preselects what the client asked for but root, and the token carries what the person chose', async () => {
    const clientId = await register(server);
    const { page } = await consentPageFor(server, owner, clientId, { scope: 'read deploy root' });
    expect(consentForm(page).checked).toEqual(['read', 'deploy']);
    expect(page.text).toContain('id="client-name">Sec Client<');
    expect(page.text).toContain('id="redirect-host">127.0.0.1:9<');
    const t = await tokensFor(server, owner, clientId, ['read', 'deploy'], { scope: 'read deploy root' });
    expect(t.scope).toBe('read deploy');
    expect(t.token_type).toBe('Bearer');
  });
});

describe('codes and tokens', () => {
  it('refuses a wrong or missing code verifier', async () => {
    const clientId = await register(server);
    const { browser, page } = await consentPageFor(server, owner, clientId);
    const back = await approve(server, browser, page);
    const code = new URL(back.location!).searchParams.get('code')!;
    const wrong = await exchange(server, clientId, code, pkce().verifier);
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toBe('invalid_grant');
    const none = await call(server.url, 'POST', '/oauth/token', form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId }));
    expect(none.status).toBe(400);
    expect(none.json.error).toBe('invalid_grant');
  });

  it('a replayed code is refused and revokes what the first exchange issued', async () => {
    const clientId = await register(server);
    const { browser, page, pk } = await consentPageFor(server, owner, clientId);
    const code = new URL((await approve(server, browser, page)).location!).searchParams.get('code')!;
    const first = await exchange(server, clientId, code, pk.verifier);
    expect(first.status).toBe(200);
    expect((await listTools(server, first.json.access_token)).status).toBe(200);
    const replay = await exchange(server, clientId, code, pk.verifier);
    expect(replay.status).toBe(400);
    expect(replay.json.error).toBe('invalid_grant');
    expect((await listTools(server, first.json.access_token)).status).toBe(401);
    expect((await admin.listTokens(server.db, String(server.rootTeamId))).some((t) => t.oauth_client_id === clientId)).toBe(false);
  });

  it('a replayed (rotated) refresh token revokes the grant', async () => {
    const clientId = await register(server);
    const t = await tokensFor(server, owner, clientId);
    const r1 = await refresh(server, clientId, t.refresh_token);
    expect(r1.status).toBe(200);
    expect(r1.json.refresh_token).not.toBe(t.refresh_token);
    expect((await listTools(server, r1.json.access_token)).status).toBe(200);
    const replay = await refresh(server, clientId, t.refresh_token);
    expect(replay.status).toBe(400);
    expect(replay.json.error).toBe('invalid_grant');
    expect((await listTools(server, r1.json.access_token)).status).toBe(401);
    expect((await refresh(server, clientId, r1.json.refresh_token)).status).toBe(400);
  });

  it('revocation (RFC 7009) of the refresh token ends the grant at the next request', async () => {
    const clientId = await register(server);
    const t = await tokensFor(server, owner, clientId);
    expect((await listTools(server, t.access_token)).status).toBe(200);
    const r = await call(server.url, 'POST', '/oauth/revoke', form({ token: t.refresh_token, client_id: clientId }));
    expect(r.status).toBe(200);
    expect((await listTools(server, t.access_token)).status).toBe(401);
    expect((await admin.listTokens(server.db, String(server.rootTeamId))).some((x) => x.oauth_client_id === clientId)).toBe(false);
  });

  it('a token for another audience is refused: another berth sharing the store, and the REST API', async () => {
    const clientId = await register(server);
    const t = await tokensFor(server, owner, clientId);
    const other: RunningServer = await startServer(
      loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: server.dataDir, databaseUrl: storeUrlFor(server.dataDir), host: '127.0.0.1', port: 0, publicUrl: 'http://berth-b.example' }),
      () => {},
    );
    try {
      expect((await listTools(server, t.access_token)).status).toBe(200);
      const r = await listTools(other, t.access_token);
      expect(r.status).toBe(401);
      expect(r.json).toEqual({ message: 'Invalid token.' });
    } finally {
      await other.close();
    }
    expect((await call(server.url, 'GET', '/api/v1/projects', { token: t.access_token })).status).toBe(401);
  });

  it("answers 403 insufficient_scope naming the scope when the token lacks the tool's permission", async () => {
    const clientId = await register(server);
    const t = await tokensFor(server, owner, clientId, ['read'], { scope: 'read' });
    const r = await call(server.url, 'POST', '/mcp', {
      token: t.access_token,
      headers: ACCEPT,
      body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create_project', arguments: { name: 'p' } } },
    });
    expect(r.status).toBe(403);
    expect(r.json).toEqual({ message: 'Missing required permissions: write', missing_permissions: ['write'] });
    expect(r.headers['www-authenticate']).toBe(`Bearer error="insufficient_scope", scope="write", resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`);
    // What it may do still works.
    const ok = await call(server.url, 'POST', '/mcp', {
      token: t.access_token,
      headers: ACCEPT,
      body: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_projects', arguments: {} } },
    });
    expect(ok.status).toBe(200);
  });

  it('expired access tokens and expired grants are refused', async () => {
    const clientId = await register(short);
    const t = await tokensFor(short, short.ownerEmail, clientId);
    expect((await listTools(short, t.access_token)).status).toBe(200);
    await sleep(2_300);
    expect((await listTools(short, t.access_token)).status).toBe(401);
    const r = await refresh(short, clientId, t.refresh_token);
    expect(r.status).toBe(200);
    expect((await listTools(short, r.json.access_token)).status).toBe(200);
    await sleep(3_800);
    const late = await refresh(short, clientId, r.json.refresh_token);
    expect(late.status).toBe(400);
    expect(late.json.error).toBe('invalid_grant');
  });
});

describe("connected apps (the console's revoke)", () => {
  it("lists a person's approvals; revoking one stops the client at its next request on every instance", async () => {
    const clientId = await register(server, 'Revocable Agent');
    const t = await tokensFor(server, member, clientId, ['read'], { scope: 'read' });
    // A second instance on the same store, answering for the same public URL.
    const second: RunningServer = await startServer(
      loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: server.dataDir, databaseUrl: storeUrlFor(server.dataDir), host: '127.0.0.1', port: 0, publicUrl: server.url }),
      () => {},
    );
    try {
      expect((await listTools(second, t.access_token)).status).toBe(200);
      const mine = (await approvalsFor(server.db, memberId)).filter((a) => a.client_id === clientId);
      expect(mine).toMatchObject([{ client_name: 'Revocable Agent', team_id: server.rootTeamId, permissions: ['read'], user_id: memberId }]);
      // The owner sees it too (their team); another member would not.
      expect((await approvalsFor(server.db, await userId(server, owner))).some((a) => a.id === mine[0]!.id)).toBe(true);

      // The console's connected apps page, signed in through the real login link.
      const base = server.url;
      const { jar } = await signInByLink(base, server.db, member);
      const page = await browse(base, jar, 'GET', '/apps');
      expect(page.status).toBe(200);
      expect(page.text).toContain('Revocable Agent');
      // Two clients may share a name: the page shows each one's client id too.
      expect(page.text).toContain(mine[0]!.client_id);
      const action = `/apps/${mine[0]!.id}/revoke`;
      expect(page.text).toContain(`action="${action}"`);
      expect((await browse(base, jar, 'POST', action, { _csrf: 'nope' })).status).toBe(403);
      expect((await listTools(second, t.access_token)).status).toBe(200);
      const done = await browse(base, jar, 'POST', action, { _csrf: csrfOf(page.text) });
      expect(done.status).toBe(303);
      expect((await listTools(second, t.access_token)).status).toBe(401);
      expect((await listTools(server, t.access_token)).status).toBe(401);
      expect((await browse(base, jar, 'POST', action, { _csrf: csrfOf(page.text) })).status).toBe(404);
    } finally {
      await second.close();
    }
  });
});

describe('a member removed in the console', () => {
  it('loses their API tokens and OAuth grants for the team for good: re-added, none works again', async () => {
    const dave = `dave-${process.pid}@example.test`;
    const api = await server.token({ permissions: ['root'], email: dave, role: 'admin' });
    const daveId = await userId(server, dave);
    const clientId = await register(server, 'Dave Agent');
    const t = await tokensFor(server, dave, clientId, ['read'], { scope: 'read' });
    expect((await listTools(server, t.access_token)).status).toBe(200);
    const grantRow = await server.db.selectFrom('api_tokens').select(['id', 'oauth_grant_id']).where('oauth_client_id', '=', clientId).executeTakeFirstOrThrow();

    const owners = await signInByLink(server.url, server.db, owner);
    const removed = await browse(server.url, owners.jar, 'POST', `/teams/${server.rootTeamId}/members/${daveId}/remove`, { _csrf: owners.csrf });
    expect(removed.status).toBe(303);
    expect(await server.db.selectFrom('api_tokens').select('id').where('user_id', '=', daveId).execute()).toEqual([]);
    expect(await server.db.selectFrom('oauth_store').select('model').where('grant_id', '=', grantRow.oauth_grant_id!).execute()).toEqual([]);
    // The removal's audit entry names the tokens it revoked.
    const entry = await server.db.selectFrom('audit_log').select('targets').where('operation', '=', 'remove_team_member').orderBy('at', 'desc').executeTakeFirstOrThrow();
    expect(JSON.parse(entry.targets)).toEqual(expect.arrayContaining([`token:${api.id}`, `token:${grantRow.id}`]));

    await admin.addMember(server.db, { team: String(server.rootTeamId), email: dave, role: 'admin' });
    expect((await call(server.url, 'GET', '/api/v1/teams/current', { token: api.token })).status).toBe(401);
    expect((await listTools(server, t.access_token)).status).toBe(401);
    expect((await refresh(server, clientId, t.refresh_token)).status).toBe(400);
  });
});
