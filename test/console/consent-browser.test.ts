import { afterEach, describe, expect, it } from 'vitest';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import { addVirtualAuthenticator, browserMissing, openPage, screenshot, useServerAndBrowser, type WatchedPage } from '../helpers/browser.js';
import { pkce } from '../helpers/oauth.js';
import { call } from '../helpers/server.js';

/**
 * Issue 39 item 5 in headless Chromium: an agent that asks for every scope gets a consent page
 * with root and read:sensitive unticked; root, when ticked, is asked for again; and signing in
 * from the consent (a link as `berth login-link` prints it, the passkey offer, later a passkey)
 * lands back on the consent. Screenshots under test-artifacts/console/consent-*.png.
 */
describe.skipIf(browserMissing)('consent in Chromium', { timeout: 120_000 }, () => {
  const held = useServerAndBrowser();
  const REDIRECT = 'http://127.0.0.1:9999/agent-cb';
  const open: WatchedPage[] = [];

  afterEach(async () => {
    for (const w of open.splice(0)) {
      await w.context.close();
      expect(w.problems).toEqual([]);
    }
  });

  /** A fresh authorization request for every scope berth advertises, as MCP clients send it. */
  async function authorizationUrl(base: string): Promise<string> {
    const reg = await call(held.s.url, 'POST', '/oauth/register', {
      body: { client_name: 'Greedy Agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
    });
    expect(reg.status, reg.text).toBe(201);
    const u = new URL('/oauth/authorize', base);
    const params = {
      response_type: 'code',
      client_id: reg.json.client_id as string,
      redirect_uri: REDIRECT,
      scope: 'read read:sensitive write deploy root',
      state: 'st-chromium',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      resource: `${base}/mcp`,
    };
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u.toString();
  }

  const ticked = (w: WatchedPage) =>
    Promise.all(['read', 'read-sensitive', 'write', 'deploy', 'root'].map(async (p) => [p, await w.page.locator(`#perm-${p}`).isChecked()] as const)).then(Object.fromEntries);

  it('link sign-in → passkey offer → back at the consent, root unticked and asked again; later a passkey sign-in → back at the consent', async () => {
    const base = held.s.url.replace('127.0.0.1', 'localhost');
    const w = await openPage(held.browser);
    open.push(w);
    await addVirtualAuthenticator(w.page);
    // Every answer the agent's listener got, in order.
    const answers: URL[] = [];
    await w.page.route(`${REDIRECT}**`, (route) => {
      answers.push(new URL(route.request().url()));
      return route.fulfill({ status: 200, contentType: 'text/plain', body: 'agent got its answer' });
    });

    await w.page.goto(await authorizationUrl(base));
    await w.page.waitForURL(/\/login\?next=/);
    const consentPath = new URL(w.page.url()).searchParams.get('next')!;
    expect(consentPath).toMatch(/^\/oauth\/consent\//);
    await screenshot(w.page, 'consent-item5-login');

    // The link as `berth login-link` prints it: it names nowhere to go.
    const link = await issueLoginLink(held.s.db, held.s.ownerEmail);
    await w.page.goto(linkUrl(base, link.token));
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await w.page.waitForURL((u) => u.pathname === '/passkeys' && u.searchParams.get('next') === consentPath);
    await screenshot(w.page, 'consent-item5-passkey-offer');
    await w.page.getByLabel('Name').fill('Chromium key');
    await w.page.getByRole('button', { name: 'Add a passkey' }).click();
    await w.page.waitForURL((u) => u.pathname === consentPath);

    expect(await ticked(w)).toEqual({ read: true, 'read-sensitive': false, write: true, deploy: true, root: false });
    expect(await w.page.locator('#root-warning').isVisible()).toBe(true);
    expect(await w.page.locator('#root-warning').textContent()).toContain('Root lets the application do anything you can');
    await screenshot(w.page, 'consent-item5-all-scopes');

    // Root ticked: the page asks again (no script), root still ticked; then it is given.
    await w.page.locator('#perm-root').check();
    await w.page.getByRole('button', { name: 'Allow', exact: true }).click();
    await w.page.locator('#root-confirm').waitFor();
    expect(answers).toEqual([]);
    expect(await ticked(w)).toMatchObject({ root: true });
    await screenshot(w.page, 'consent-item5-root-confirm');
    await w.page.getByRole('button', { name: 'Allow with root' }).click();
    await w.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    expect(answers).toHaveLength(1);
    expect(answers[0]!.searchParams.get('code')).toBeTruthy();
    const approval = await held.s.db.selectFrom('api_tokens').select('permissions').where('name', '=', 'Greedy Agent').executeTakeFirstOrThrow();
    expect(JSON.parse(approval.permissions)).toEqual(['read', 'write', 'deploy', 'root']);

    // Signed out (cookies gone; the passkey stays in the authenticator): a passkey sign-in from
    // the next request's sign-in page also lands on its consent.
    await w.context.clearCookies();
    await w.page.goto(await authorizationUrl(base));
    await w.page.waitForURL(/\/login\?next=/);
    const second = new URL(w.page.url()).searchParams.get('next')!;
    await w.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await w.page.waitForURL((u) => u.pathname === second);
    expect(await ticked(w)).toEqual({ read: true, 'read-sensitive': false, write: true, deploy: true, root: false });
    await screenshot(w.page, 'consent-item5-after-passkey');
    await w.page.getByRole('button', { name: 'Deny' }).click();
    await w.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    expect(answers).toHaveLength(2);
    expect(answers[1]!.searchParams.get('error')).toBe('access_denied');
  });
});
