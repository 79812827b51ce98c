/**
 * Issue 39 item 5, against a real `berth serve` over HTTP: the consent page never ticks root or
 * read:sensitive and asks again before giving root; its post is refused from another origin;
 * after signing in by a link that names nowhere (as `berth login-link` prints it) the person comes
 * back to the consent; http redirect URIs only for this machine; registrations limited per address
 * (OAuth's error shape); and clients removed 24 h after registering without an authorization, or
 * after the idle period, with their approvals (the scheduler's sweep, both stores).
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import { idHash, UNUSED_REGISTRATION_S } from '../../src/auth/oauth/adapter.js';
import { OAuthClientSweep } from '../../src/workers/oauth-client-sweep.js';
import { csrfOf } from '../helpers/console.js';
import { atLocalhost, Browser, consentForm, pkce, signIn, type Page } from '../helpers/oauth.js';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';

const REDIRECT = 'http://127.0.0.1:9/cb';
const ALL = 'read read:sensitive write deploy root';
const ACCEPT = { accept: 'application/json, text/event-stream' };
const DAY = 86_400_000;
const IDLE_DAYS = 30;

let server: TestServer;
let limited: TestServer;
const member = `consent-member-${process.pid}@example.test`;

beforeAll(async () => {
  [server, limited] = (await Promise.all([startTestServer(), startTestServer({ oauthRegistrationsPerHour: 2 })])).map(atLocalhost) as [TestServer, TestServer];
  await server.token({ permissions: ['read'], email: member, role: 'member' });
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.stop(), limited?.stop()]);
});

const registerWith = (s: TestServer, metadata: Record<string, unknown>) =>
  call(s.url, 'POST', '/oauth/register', {
    body: { client_name: 'Item 5 Client', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', ...metadata },
  });

async function register(s: TestServer = server): Promise<string> {
  const r = await registerWith(s, { redirect_uris: [REDIRECT] });
  expect(r.status, r.text).toBe(201);
  return r.json.client_id;
}

function authUrl(s: TestServer, clientId: string, challenge: string, scope = ALL): string {
  const u = new URL('/oauth/authorize', s.url);
  const params = { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, scope, state: 'st-5', code_challenge: challenge, code_challenge_method: 'S256', resource: `${s.url}/mcp` };
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

async function consentAs(email: string, clientId: string, scope = ALL) {
  const pk = pkce();
  const browser = new Browser(server.url);
  await signIn(browser, server.db, email);
  const page = await browser.go('GET', authUrl(server, clientId, pk.challenge, scope));
  expect(page.status, page.text.slice(0, 300)).toBe(200);
  return { browser, page, pk };
}

const answer = (page: Page, permissions: string[], extra: [string, string][] = []) => {
  const f = consentForm(page);
  return {
    url: new URL(f.action, server.url).toString(),
    fields: new URLSearchParams([['csrf', f.csrf], ['team', f.team], ['decision', 'approve'], ...permissions.map((p) => ['permission', p] as [string, string]), ...extra]),
  };
};

const codeOf = (p: Page) => (p.location?.startsWith(REDIRECT) ? new URL(p.location).searchParams.get('code') : null);

async function exchange(clientId: string, code: string, verifier: string): Promise<Reply> {
  return call(server.url, 'POST', '/oauth/token', {
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
}

/** Consent with what the page ticks, then the code exchanged: the token answer. */
async function tokensFor(clientId: string): Promise<{ access_token: string; refresh_token: string }> {
  const { browser, page, pk } = await consentAs(server.ownerEmail, clientId, 'read');
  const a = answer(page, consentForm(page).checked);
  const code = codeOf(await browser.go('POST', a.url, a.fields));
  const t = await exchange(clientId, code!, pk.verifier);
  expect(t.status, t.text).toBe(200);
  return t.json;
}

const clientRow = (clientId: string) => server.db.selectFrom('oauth_store').select(['expires_at']).where('model', '=', 'Client').where('id_hash', '=', idHash(clientId)).executeTakeFirst();
const approvalsOf = (clientId: string) => server.db.selectFrom('api_tokens').select(['id', 'last_used_at']).where('oauth_client_id', '=', clientId).execute();
const listTools = (token: string) => call(server.url, 'POST', '/mcp', { token, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: ACCEPT });
const sweep = (at: number) => new OAuthClientSweep(server.db, pino({ level: 'silent' }), IDLE_DAYS).tick(new Date(at));

describe('the consent page', () => {
  it('never ticks root or read:sensitive, even when the client asks for every scope; root carries a warning', async () => {
    const clientId = await register();
    const owner = await consentAs(server.ownerEmail, clientId);
    const f = consentForm(owner.page);
    expect(f.checked).toEqual(['read', 'write', 'deploy']);
    expect(f.disabled).toEqual([]);
    expect(owner.page.text).toMatch(/id="perm-root" name="permission" value="root" aria-describedby="root-warning">.*<p class="warn" id="root-warning">Root lets the application do anything you can/);
    // A member: within their role (no root offered at all), read:sensitive still unticked.
    const m = consentForm((await consentAs(member, clientId)).page);
    expect(m.checked).toEqual(['read', 'write', 'deploy']);
    expect(m.disabled).toEqual(['root']);
    // Only root asked: read is what a hurried Allow gives.
    expect(consentForm((await consentAs(server.ownerEmail, clientId, 'root')).page).checked).toEqual(['read']);
  });

  it('asks again before giving root; the second answer gives it, untick gives less', async () => {
    const clientId = await register();
    const { browser, page, pk } = await consentAs(server.ownerEmail, clientId);
    const first = answer(page, ['read', 'root']);
    const again = await browser.send('POST', first.url, first.fields);
    expect(again.status).toBe(200);
    expect(codeOf(again)).toBeNull();
    expect(again.text).toContain('id="root-confirm"');
    expect(again.text).toContain('>Allow with root</button>');
    const f = consentForm(again);
    expect(f.checked).toEqual(['read', 'root']);
    expect(again.text).toContain('name="confirm_root" value="yes"');
    // Nothing was approved by the first answer.
    expect(await approvalsOf(clientId)).toEqual([]);
    const confirmed = answer(again, f.checked, [['confirm_root', 'yes']]);
    const back = await browser.go('POST', confirmed.url, confirmed.fields);
    const t = await exchange(clientId, codeOf(back)!, pk.verifier);
    expect(t.json.scope).toBe('read root');

    // On the confirmation page, root unticked: no confirmation needed, read only.
    const second = await consentAs(server.ownerEmail, clientId);
    const asked = answer(second.page, ['read', 'root']);
    const page2 = await second.browser.send('POST', asked.url, asked.fields);
    const without = answer(page2, ['read'], [['confirm_root', 'yes']]);
    const t2 = await exchange(clientId, codeOf(await second.browser.go('POST', without.url, without.fields))!, second.pk.verifier);
    expect(t2.json.scope).toBe('read');
  });

  it("refuses a post whose Origin is another site's or null; its own origin, or none, passes", async () => {
    const clientId = await register();
    const { browser, page } = await consentAs(server.ownerEmail, clientId, 'read');
    const a = answer(page, ['read']);
    for (const origin of ['https://evil.example', 'null', 'http://localhost:1']) {
      const r = await browser.send('POST', a.url, a.fields, { origin });
      expect(r.status, origin).toBe(403);
      expect(r.location).toBeUndefined();
    }
    expect(await approvalsOf(clientId)).toEqual([]);
    const ok = await browser.send('POST', a.url, a.fields, { origin: new URL(server.url).origin });
    expect(ok.status).toBe(303);
    expect(codeOf(await browser.go('GET', ok.location!))).toBeTruthy();
  });
});

describe('signing in from the consent page', () => {
  it('a link that names nowhere (berth login-link) still comes back to the consent, through the passkey offer', async () => {
    const clientId = await register();
    const browser = new Browser(server.url);
    const start = await browser.go('GET', authUrl(server, clientId, pkce().challenge));
    expect(start.url).toMatch(/\/login\?next=%2Foauth%2Fconsent%2F/);
    const consentPath = decodeURIComponent(new URL(start.url).searchParams.get('next')!);
    // A first-time person: the link as the CLI prints it, no next in it.
    const email = `newcomer-${process.pid}@example.test`;
    await server.token({ permissions: ['read'], email, role: 'member' });
    const link = await issueLoginLink(server.db, email);
    const confirm = await browser.send('GET', linkUrl(server.url, link.token));
    expect(confirm.status).toBe(200);
    const signedIn = await browser.send('POST', `${server.url}/login/link`, new URLSearchParams({ _csrf: csrfOf(confirm.text), token: link.token }));
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe(`${server.url}/passkeys?setup=1&next=${encodeURIComponent(consentPath)}`);
    const offer = await browser.send('GET', signedIn.location!);
    expect(offer.text).toContain(`<a href="${consentPath}">Not now</a>`);
    expect(offer.text).toContain(`data-next="${consentPath}"`);
    const consent = await browser.go('GET', `${server.url}${consentPath}`);
    expect(consent.status).toBe(200);
    expect(consentForm(consent).checked).toEqual(['read', 'write', 'deploy']);
    // Remembered once: the next sign-in in this browser goes home.
    const link2 = await issueLoginLink(server.db, email);
    const confirm2 = await browser.send('GET', linkUrl(server.url, link2.token));
    const again = await browser.send('POST', `${server.url}/login/link`, new URLSearchParams({ _csrf: csrfOf(confirm2.text), token: link2.token }));
    expect(again.location).toBe(`${server.url}/passkeys?setup=1`);
  });

  it('a remembered or given next is a local path only', async () => {
    const browser = new Browser(server.url);
    for (const bad of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      await browser.send('GET', `${server.url}/login?next=${encodeURIComponent(bad)}`);
      expect(browser.cookies.has('berth_next'), bad).toBe(false);
    }
    // A forged cookie is read through the same check.
    browser.cookies.set('berth_next', encodeURIComponent('//evil.example/x'));
    const email = `forged-next-${process.pid}@example.test`;
    await server.token({ permissions: ['read'], email, role: 'member' });
    const link = await issueLoginLink(server.db, email);
    const confirm = await browser.send('GET', linkUrl(server.url, link.token));
    const r = await browser.send('POST', `${server.url}/login/link`, new URLSearchParams({ _csrf: csrfOf(confirm.text), token: link.token }));
    expect(r.location).toBe(`${server.url}/passkeys?setup=1`);
  });
});

describe('registration', () => {
  it('takes http redirect URIs for loopback hosts only; https and native schemes elsewhere', async () => {
    for (const uri of ['http://evil.example/cb', 'http://192.168.1.5:8/cb', 'http://127.0.0.1.evil.example/cb', 'http://localhost.evil.example/cb']) {
      const r = await registerWith(server, { redirect_uris: [REDIRECT, uri] });
      expect(r.status, uri).toBe(400);
      expect(r.json.error, uri).toBe('invalid_redirect_uri');
      expect(r.json.error_description).toContain('loopback');
    }
    for (const uri of ['http://127.0.0.1:9/cb', 'http://127.3.4.5/cb', 'http://[::1]:7/cb', 'http://localhost:33418/', 'https://app.example/oauth/cb']) {
      const r = await registerWith(server, { redirect_uris: [uri] });
      expect(r.status, `${uri}: ${r.text}`).toBe(201);
    }
    const native = await registerWith(server, { application_type: 'native', redirect_uris: ['com.example.agent:/oauth/cb'] });
    expect(native.status, native.text).toBe(201);
  });

  it('limits registrations per source address, answering 429 in OAuth’s error shape', async () => {
    expect((await register(limited)).length).toBeGreaterThan(0);
    expect((await register(limited)).length).toBeGreaterThan(0);
    const third = await registerWith(limited, { redirect_uris: [REDIRECT] });
    expect(third.status).toBe(429);
    expect(third.json).toEqual({ error: 'temporarily_unavailable', error_description: 'Too many client registrations from this address (2 an hour); try again later.' });
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(3500);
    // Nothing stored for the refused one.
    expect((await limited.db.selectFrom('oauth_store').select('id_hash').where('model', '=', 'Client').execute()).length).toBe(2);
  });
});

describe('client lifetime', () => {
  it('a registration with no authorization within 24 h is gone: unknown at once, removed by the sweep', async () => {
    const before = Date.now();
    const clientId = await register();
    const row = await clientRow(clientId);
    expect(Number(row!.expires_at)).toBeGreaterThanOrEqual(before + UNUSED_REGISTRATION_S * 1000);
    expect(Number(row!.expires_at)).toBeLessThanOrEqual(Date.now() + UNUSED_REGISTRATION_S * 1000);
    await sweep(Date.now() + 23 * 3600_000);
    expect(await clientRow(clientId)).toBeDefined();
    await sweep(Date.now() + 25 * 3600_000);
    expect(await clientRow(clientId)).toBeUndefined();
    const browser = new Browser(server.url);
    await signIn(browser, server.db, server.ownerEmail);
    const page = await browser.go('GET', authUrl(server, clientId, pkce().challenge));
    expect(page.status).toBe(400);
    expect(page.text).toContain('invalid_client');
  });

  it('an authorized client lives the idle period from its last code or token, or its last request at /mcp', async () => {
    const clientId = await register();
    const t = await tokensFor(clientId);
    const expires = Number((await clientRow(clientId))!.expires_at);
    expect(expires).toBeGreaterThan(Date.now() + (IDLE_DAYS * DAY - 3600_000));
    // Used at /mcp today (last_used_at): a sweep 29 days on keeps it another idle period from then.
    expect((await listTools(t.access_token)).status).toBe(200);
    const at = Date.now() + 29 * DAY;
    await sweep(at);
    expect(Number((await clientRow(clientId))!.expires_at)).toBeGreaterThanOrEqual(at + IDLE_DAYS * DAY);
    await sweep(Date.now() + 45 * DAY);
    expect(await clientRow(clientId)).toBeDefined();
    expect(await approvalsOf(clientId)).toHaveLength(1);
  });

  it('an idle client is removed with its approvals; its token stops working', async () => {
    const clientId = await register();
    const t = await tokensFor(clientId);
    expect((await listTools(t.access_token)).status).toBe(200);
    const other = await register();
    await tokensFor(other);
    await sweep(Date.now() + (IDLE_DAYS + 1) * DAY);
    expect(await clientRow(clientId)).toBeUndefined();
    expect(await approvalsOf(clientId)).toEqual([]);
    expect(await approvalsOf(other)).toEqual([]);
    expect((await listTools(t.access_token)).status).toBe(401);
  });

  it('a registration kept from before clients expired gets one idle period from the sweep', async () => {
    const clientId = await register();
    await server.db.updateTable('oauth_store').set({ expires_at: null }).where('model', '=', 'Client').where('id_hash', '=', idHash(clientId)).execute();
    const at = Date.now();
    await sweep(at);
    expect(Number((await clientRow(clientId))!.expires_at)).toBe(at + IDLE_DAYS * DAY);
  });
});
