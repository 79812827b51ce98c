import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import { addVirtualAuthenticator, browserMissing, launchBrowser, openPage, screenshot, type WatchedPage } from '../helpers/browser.js';
import { pkce } from '../helpers/oauth.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The console in a real browser (headless Chromium): sign-in by link, a passkey made and used
 * with Chromium's virtual authenticator, tokens made and revoked, members managed. Every page
 * is screenshotted under test-artifacts/console/, and any console or page error fails the test.
 */
// A browser on two shared cores is slow to start and to paint: generous limits, not timed assertions.
describe.skipIf(browserMissing)('console in Chromium', { timeout: 120_000 }, () => {
  let s: TestServer;
  let browser: Browser;
  /** localhost, not 127.0.0.1: an IP address cannot be a passkey's relying party. */
  let base: string;
  const open: WatchedPage[] = [];

  beforeAll(async () => {
    [s, browser] = await Promise.all([startTestServer(), launchBrowser()]);
    base = s.url.replace('127.0.0.1', 'localhost');
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
  });
  afterEach(async () => {
    for (const w of open.splice(0)) {
      await w.context.close();
      expect(w.problems).toEqual([]);
    }
  });

  async function page(viewport?: { width: number; height: number }) {
    const w = await openPage(browser, viewport);
    open.push(w);
    return w;
  }

  /** The console door's entries of an operation, oldest first, as stored (issue 26's audit log). */
  const consoleEntries = (operation: string) => s.db.selectFrom('audit_log').selectAll().where('door', '=', 'console').where('operation', '=', operation).orderBy('id').execute();
  const userId = async (email: string) => (await s.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id;

  /** Opens a fresh login link; the page then asks to confirm. */
  async function openLink(w: WatchedPage, email: string) {
    const link = await issueLoginLink(s.db, email);
    await w.page.goto(linkUrl(base, link.token));
    return link;
  }

  /** Signs in by link and waits until the console took over (the passkey offer, or the tokens). */
  async function signIn(w: WatchedPage, email: string) {
    await openLink(w, email);
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await w.page.waitForURL((u) => u.pathname === '/passkeys' || u.pathname === '/tokens');
  }

  it('link → passkey → sign out → passkey sign-in → token made, used, revoked', async () => {
    const w = await page();
    const { page: p } = w;
    await addVirtualAuthenticator(p);

    await p.goto(`${base}/`);
    await expect.poll(() => p.url()).toBe(`${base}/login`);
    await screenshot(p, 'login');

    await openLink(w, s.ownerEmail);
    await screenshot(p, 'login-link');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL(`${base}/passkeys?setup=1`);
    await screenshot(p, 'passkey-offer');

    await p.getByLabel('Name').fill('CI authenticator');
    await p.getByRole('button', { name: 'Add a passkey' }).click();
    await p.waitForURL(`${base}/tokens`);
    const keys = await s.db.selectFrom('passkeys as k').innerJoin('users as u', 'u.id', 'k.user_id').select(['k.name', 'u.email']).execute();
    expect(keys).toEqual([{ name: 'CI authenticator', email: s.ownerEmail }]);

    await p.getByRole('button', { name: 'Sign out' }).click();
    await p.waitForURL(`${base}/login`);
    expect(await s.db.selectFrom('console_sessions').select('id_hash').execute()).toEqual([]);

    await p.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await p.waitForURL(`${base}/tokens`);
    await screenshot(p, 'tokens');
    await p.goto(`${base}/passkeys`);
    await expect.poll(() => p.getByRole('cell', { name: 'CI authenticator', exact: true }).count()).toBe(1);
    await screenshot(p, 'passkeys');

    // A token, with the spec's options; its value is shown once and works on the API.
    await p.goto(`${base}/tokens`);
    await p.getByLabel('Name', { exact: true }).fill('ci agent');
    await p.getByLabel('Expires after').selectOption({ label: '7 days' });
    await p.getByRole('checkbox', { name: /^read \(/ }).check();
    await p.getByRole('checkbox', { name: /^write \(/ }).check();
    await p.getByRole('button', { name: 'Create token' }).click();
    await expect.poll(() => p.getByRole('heading', { level: 1 }).textContent()).toBe('Token created');
    await screenshot(p, 'token-created');
    const value = (await p.locator('#token-value').textContent())!.trim();
    expect(value).toMatch(/^\d+\|[A-Za-z0-9]{48}$/);
    const ok = await call(s.url, 'GET', '/api/v1/teams/current', { token: value });
    expect(ok.status).toBe(200);
    const row = await s.db
      .selectFrom('api_tokens')
      .selectAll()
      .where('id', '=', Number(value.split('|')[0]))
      .executeTakeFirstOrThrow();
    expect(JSON.parse(row.permissions)).toEqual(['read', 'write']);
    expect(Date.parse(row.expires_at!) - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    expect(Date.parse(row.expires_at!) - Date.now()).toBeLessThan(7.1 * 86_400_000);

    // Shown once: the list never shows it again.
    await p.goto(`${base}/tokens`);
    expect(await p.content()).not.toContain(value.split('|')[1]);
    await p.getByRole('button', { name: 'Revoke token ci agent' }).click();
    await p.waitForURL(/\/tokens\?revoked=/);
    await screenshot(p, 'token-revoked');
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token: value })).status).toBe(401);

    // Each change is one entry of the person, from this browser's address; the value shown once is in none.
    const tokenId = Number(value.split('|')[0]);
    const owner = await userId(s.ownerEmail);
    const [created] = await consoleEntries('create_token');
    const revoked = await consoleEntries('revoke_token');
    expect(revoked).toHaveLength(1);
    for (const e of [created!, revoked[0]!]) {
      expect(e).toMatchObject({ team_id: s.rootTeamId, user_id: owner, token_id: null, source_ip: '127.0.0.1', result: 'ok', targets: JSON.stringify([`token:${tokenId}`]) });
    }
    expect(JSON.parse(revoked[0]!.arguments!)).toEqual({ id: tokenId });
    expect((await consoleEntries('create_passkey')).map((e) => [e.user_id, JSON.parse(e.arguments!)])).toEqual([[owner, { name: 'CI authenticator' }]]);
    const stored = JSON.stringify(await s.db.selectFrom('audit_log').selectAll().execute());
    expect(stored).not.toContain(value.split('|')[1]);
  });

  it('a member cannot grant root: the form says so and nothing is made', async () => {
    const email = `member-root-${process.pid}@example.test`;
    await s.token({ permissions: ['read'], email, role: 'member' });
    const before = await s.db.selectFrom('api_tokens').select('id').execute();
    const w = await page();
    await signIn(w, email);
    await w.page.goto(`${base}/tokens`);
    await w.page.getByLabel('Name', { exact: true }).fill('too much');
    await w.page.getByRole('checkbox', { name: /^root \(/ }).check();
    await w.page.getByRole('button', { name: 'Create token' }).click();
    await expect.poll(() => w.page.getByRole('alert').first().textContent()).toContain('not created');
    await screenshot(w.page, 'token-refused');
    expect(await w.page.locator('#permissions-error').textContent()).toContain('cannot grant root');
    expect(await s.db.selectFrom('api_tokens').select('id').execute()).toEqual(before);
    // 422 for the form's answer: a console error line for it is Chromium's, expected here.
    w.problems.splice(0, w.problems.length, ...w.problems.filter((m) => !/status of 422/.test(m)));
  });

  it('members page: an owner changes a role and removes a member; a member has no access', async () => {
    const memberEmail = `member-${process.pid}@example.test`;
    const otherEmail = `other-${process.pid}@example.test`;
    const memberToken = await s.token({ permissions: ['read'], email: memberEmail, role: 'member' });
    await s.token({ permissions: ['read'], email: otherEmail, role: 'member' });
    const other = await s.db.selectFrom('users').select('id').where('email', '=', otherEmail).executeTakeFirstOrThrow();

    const w = await page();
    await signIn(w, s.ownerEmail);
    await w.page.goto(`${base}/teams`);
    await screenshot(w.page, 'teams');
    await w.page.getByRole('link', { name: /Members of/ }).click();
    await w.page.waitForURL(`${base}/teams/${s.rootTeamId}/members`);
    await screenshot(w.page, 'members-owner');
    await w.page.getByLabel(`Role of ${otherEmail}`).selectOption('admin');
    await w.page
      .getByRole('row', { name: new RegExp(otherEmail) })
      .getByRole('button', { name: 'Change' })
      .click();
    await w.page.waitForURL(/changed=1/);
    expect((await s.db.selectFrom('team_members').select('role').where('user_id', '=', other.id).executeTakeFirstOrThrow()).role).toBe('admin');
    await w.page.getByRole('button', { name: `Remove ${memberEmail}` }).click();
    await w.page.waitForURL(/removed=1/);
    await screenshot(w.page, 'members-removed');
    // Their token for the team stopped at once: it is revoked, and the entry names it.
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token: memberToken.token })).status).toBe(401);
    // One entry each, by the signed-in owner, visible to the team through the API.
    const audit = await call(s.url, 'GET', '/api/v1/audit?per_page=100', { token: s.rootToken });
    const mine = (audit.json as any[]).filter((e) => e.door === 'console' && ['update_team_member', 'remove_team_member'].includes(e.operation));
    const removedId = await userId(memberEmail);
    expect(mine.map((e) => [e.operation, e.user_email, e.result, e.targets])).toEqual([
      ['remove_team_member', s.ownerEmail, 'ok', [`team:${s.rootTeamId}`, `user:${removedId}`, `token:${memberToken.id}`]],
      ['update_team_member', s.ownerEmail, 'ok', [`team:${s.rootTeamId}`, `user:${other.id}`]],
    ]);
    expect(mine[1].arguments).toEqual({ team_id: s.rootTeamId, user_id: other.id, role: 'admin' });

    // A plain member: no Members link, and the page itself is refused.
    const plainEmail = `plain-${process.pid}@example.test`;
    await s.token({ permissions: ['read'], email: plainEmail, role: 'member' });
    const m = await page();
    await signIn(m, plainEmail);
    await m.page.goto(`${base}/teams`);
    expect(await m.page.getByRole('link', { name: /Members of/ }).count()).toBe(0);
    const refused = await m.page.goto(`${base}/teams/${s.rootTeamId}/members`);
    expect(refused!.status()).toBe(403);
    await screenshot(m.page, 'members-as-member');
    m.problems.splice(0, m.problems.length, ...m.problems.filter((x) => !/status of 403/.test(x)));
  });

  it('connected apps page lists none before any agent connected', async () => {
    const w = await page();
    await signIn(w, s.ownerEmail);
    await w.page.goto(`${base}/apps`);
    expect(await w.page.getByText('No connected apps.').count()).toBe(1);
    await screenshot(w.page, 'apps');
  });

  it('readable on a phone: no sideways scrolling; keyboard reaches the skip link with a visible focus', async () => {
    const w = await page({ width: 375, height: 740 });
    await signIn(w, s.ownerEmail);
    for (const path of ['/tokens', `/teams/${s.rootTeamId}/members`, '/passkeys', '/apps']) {
      await w.page.goto(base + path);
      // Evaluated in the page (strings: the tests compile without the DOM's types).
      const overflow = await w.page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
      expect(overflow, path).toBeLessThanOrEqual(0);
      await screenshot(w.page, `phone${path.replace(/\//g, '-')}`);
    }
    await w.page.keyboard.press('Tab');
    const focused = await w.page.evaluate<{ text: string; outline: string }>('({ text: document.activeElement.textContent, outline: getComputedStyle(document.activeElement).outlineStyle })');
    expect(focused).toEqual({ text: 'Skip to content', outline: 'solid' });
  });

  it('consent: an agent’s authorization request → sign in by link → approve as shown → the agent lists tools; revoked in Connected apps, it is refused', async () => {
    const REDIRECT = 'http://127.0.0.1:9999/cb';
    const ACCEPT = { accept: 'application/json, text/event-stream' };
    const reg = await call(s.url, 'POST', '/oauth/register', {
      body: { client_name: 'Chromium Agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
    });
    expect(reg.status, reg.text).toBe(201);
    const clientId = reg.json.client_id as string;
    const pk = pkce();
    // As OAuth clients address berth: its issuer (http://localhost:PORT by default).
    const auth = new URL('/oauth/authorize', base);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      scope: 'read write',
      state: 'st-1',
      code_challenge: pk.challenge,
      code_challenge_method: 'S256',
      resource: `${base}/mcp`,
    }))
      auth.searchParams.set(k, v);

    const email = `agent-user-${process.pid}@example.test`;
    await s.token({ permissions: ['read'], email, role: 'member' });
    const w = await page();
    // The client's redirect URI is caught here, as the agent's own listener would.
    let back: URL | undefined;
    await w.page.route(`${REDIRECT}**`, (route) => {
      back = new URL(route.request().url());
      return route.fulfill({ status: 200, contentType: 'text/plain', body: 'agent got the code' });
    });
    // Consent is on the issuer's host (localhost); no passkey is needed for it.
    await w.page.goto(auth.toString());
    await w.page.waitForURL(/\/login\?next=/);
    await screenshot(w.page, 'consent-sign-in');
    const next = new URL(w.page.url()).searchParams.get('next')!;
    expect(next).toMatch(/^\/oauth\/consent\//);
    const link = await issueLoginLink(s.db, email);
    await w.page.goto(`${linkUrl(base, link.token)}&next=${encodeURIComponent(next)}`);
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    // A first sign-in offers a passkey; "Not now" goes on to the consent page.
    await w.page.getByRole('link', { name: 'Not now' }).click();
    await w.page.waitForURL((u) => u.pathname.startsWith('/oauth/consent/'));
    expect(await w.page.locator('#client-name').textContent()).toBe('Chromium Agent');
    await screenshot(w.page, 'consent');
    await w.page.getByRole('button', { name: 'Allow' }).click();
    // The redirect is caught as soon as it is requested; wait until the page has arrived there,
    // or the next goto races the redirect's navigation.
    await w.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    expect(back?.searchParams.get('code')).toBeTruthy();
    expect(back!.searchParams.get('state')).toBe('st-1');

    const token = await call(s.url, 'POST', '/oauth/token', {
      body: new URLSearchParams({ grant_type: 'authorization_code', code: back!.searchParams.get('code')!, redirect_uri: REDIRECT, client_id: clientId, code_verifier: pk.verifier }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(token.status, token.text).toBe(200);
    const access = token.json.access_token as string;
    const tools = await call(s.url, 'POST', '/mcp', { token: access, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: ACCEPT });
    expect(tools.status, tools.text).toBe(200);
    expect(tools.text).toContain('"name":"get_current_team"');

    await w.page.goto(`${base}/apps`);
    expect(await w.page.getByRole('cell', { name: 'Chromium Agent', exact: true }).count()).toBe(1);
    await screenshot(w.page, 'apps-connected');
    await w.page.getByRole('button', { name: 'Revoke Chromium Agent' }).click();
    await w.page.waitForURL(/\/apps\?revoked=1/);
    expect(await w.page.getByText('No connected apps.').count()).toBe(1);
    const refused = await call(s.url, 'POST', '/mcp', { token: access, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers: ACCEPT });
    expect(refused.status).toBe(401);
    // The approval and its revocation: one console entry each, by this person, naming the client.
    const person = await userId(email);
    const [approved] = await consoleEntries('approve_oauth_client');
    expect(approved).toMatchObject({ user_id: person, team_id: s.rootTeamId, result: 'ok', status: 201 });
    expect(JSON.parse(approved!.arguments!)).toEqual({ client_id: clientId, team_id: s.rootTeamId, permissions: ['read', 'write'] });
    const appRevoked = (await consoleEntries('revoke_token')).filter((e) => e.user_id === person);
    expect(appRevoked.map((e) => JSON.parse(e.targets))).toEqual([JSON.parse(approved!.targets)]);
  });
});
