import { describe, expect, it } from 'vitest';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import { addVirtualAuthenticator, browserMissing, openPage, screenshot, useServerAndBrowser } from '../helpers/browser.js';
import { call } from '../helpers/server.js';

/**
 * A person approves an agent's held call in the console, in headless Chromium: the queue lists
 * it, its page shows the operation, target, redacted arguments and their hash, and "Approve and
 * run" runs it, with the session alone for a person without a passkey and with a passkey check
 * (user verified, made for that approval) for one who has one (issue 39). Screenshots go to
 * test-artifacts/console/.
 */
describe.skipIf(browserMissing)('approving in the console (Chromium)', { timeout: 120_000 }, () => {
  const env = useServerAndBrowser();

  /** A delete of a new project held for a person (the owner's token, an agent). */
  async function heldDelete(name: string) {
    const { s } = env;
    // The first policy is set at once; changing it later would itself wait for a person.
    const policy = await call(s.url, 'GET', '/api/v1/approvals/policy', { token: s.rootToken });
    if (!policy.json.rules.length) expect((await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['delete_project'] } })).status).toBe(200);
    const p = (await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name } })).json.uuid as string;
    const held = await call(s.url, 'DELETE', `/api/v1/projects/${p}`, { token: s.rootToken });
    expect(held.status).toBe(202);
    return { p, uuid: held.json.approval.uuid as string, hash: held.json.approval.args_hash as string };
  }
  const approval = async (uuid: string) => (await call(env.s.url, 'GET', `/api/v1/approvals/${uuid}`, { token: env.s.rootToken })).json as { status: string; decided_via: string | null };
  const projectStatus = async (p: string) => (await call(env.s.url, 'GET', `/api/v1/projects/${p}`, { token: env.s.rootToken })).status;

  it('queue → approval page → approve (no passkey: the signed-in session): the call ran once', async () => {
    const { s, browser } = env;
    const { p, uuid, hash } = await heldDelete('in the browser');

    const w = await openPage(browser);
    try {
      const { page } = w;
      const link = await issueLoginLink(s.db, s.ownerEmail);
      await page.goto(linkUrl(s.url, link.token));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/passkeys' || u.pathname === '/tokens');

      await page.getByRole('link', { name: 'Approvals' }).click();
      await page.waitForURL((u) => u.pathname === '/approvals');
      await screenshot(page, 'approvals-queue');
      await page.getByRole('link', { name: 'delete_project' }).click();
      await page.waitForURL((u) => u.pathname === `/approvals/${uuid}`);
      expect(await page.locator('#approval-status').textContent()).toBe('pending');
      expect(await page.locator('#approval-arguments').textContent()).toContain(p);
      expect(await page.locator('#approval-args-hash').textContent()).toBe(hash.slice(0, 12));
      expect(await page.getByText('Approving asks for your passkey').count()).toBe(0);
      await screenshot(page, 'approval-pending');

      await page.getByRole('button', { name: 'Approve and run' }).click();
      await page.waitForURL((u) => u.pathname === `/approvals/${uuid}`);
      await page.locator('#approval-status', { hasText: 'succeeded' }).waitFor();
      await screenshot(page, 'approval-succeeded');
      expect(await page.getByRole('button', { name: 'Approve and run' }).count()).toBe(0);
      expect(w.problems).toEqual([]);
    } finally {
      await w.context.close();
    }
    expect(await projectStatus(p)).toBe(404);
  });

  it('with a passkey: approving asks for it (user verified, for this approval); the form without it, or sent again, approves nothing', async () => {
    const { s, browser } = env;
    // localhost, not 127.0.0.1: an IP address cannot be a passkey's relying party.
    const base = s.url.replace('127.0.0.1', 'localhost');
    const email = `approver-${process.pid}@example.test`;
    await s.token({ permissions: ['read'], role: 'admin', email });
    const first = await heldDelete('approved with a passkey');
    const second = await heldDelete('person not verified');

    const w = await openPage(browser);
    try {
      const { page } = w;
      const { cdp, authenticatorId } = await addVirtualAuthenticator(page);
      const link = await issueLoginLink(s.db, email);
      await page.goto(linkUrl(base, link.token));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/passkeys');
      await page.getByLabel('Name').fill('approver key');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.waitForURL((u) => u.pathname === '/tokens');

      const url = `${base}/approvals/${first.uuid}/approve`;
      await page.goto(`${base}/approvals/${first.uuid}`);
      await page.getByText('Approving asks for your passkey').waitFor();
      expect(await page.locator('#approval-args-hash').textContent()).toBe(first.hash.slice(0, 12));
      await screenshot(page, 'approval-passkey-pending');

      // The form alone, as a page an agent drives or a stolen cookie could send it: refused, nothing decided.
      const csrf = await page.locator('#approval-approve input[name="_csrf"]').inputValue();
      const bare = await w.context.request.post(url, { form: { _csrf: csrf, args_hash: first.hash }, maxRedirects: 0 });
      expect(bare.status()).toBe(403);
      expect(await bare.text()).toContain('approving takes a check with it');
      expect((await approval(first.uuid)).status).toBe('pending');

      // Approve: the page asks the authenticator, then posts its answer with the form.
      const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url() === url);
      await page.getByRole('button', { name: 'Approve and run' }).click();
      const posted = (await sent).postData() ?? '';
      await page.locator('#approval-status', { hasText: 'succeeded' }).waitFor();
      await screenshot(page, 'approval-passkey-succeeded');
      expect(JSON.parse(new URLSearchParams(posted).get('webauthn') ?? '{}').response).toHaveProperty('authenticatorData');
      expect(await approval(first.uuid)).toMatchObject({ status: 'succeeded', decided_via: 'console' });

      // The same form, passkey answer included, sent again: refused.
      const replay = await w.context.request.post(url, { data: posted, headers: { 'content-type': 'application/x-www-form-urlencoded' }, maxRedirects: 0 });
      expect([403, 409]).toContain(replay.status());

      // An authenticator that cannot verify the person (presence only): no approval.
      await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
      await page.goto(`${base}/approvals/${second.uuid}`);
      await page.getByRole('button', { name: 'Approve and run' }).click();
      await expect.poll(() => page.locator('#approval-passkey-status').textContent()).toMatch(/^Not approved/);
      await screenshot(page, 'approval-passkey-unverified');
      expect((await approval(second.uuid)).status).toBe('pending');
      expect(w.problems).toEqual([]);
    } finally {
      await w.context.close();
    }
    expect(await projectStatus(first.p)).toBe(404);
    expect(await projectStatus(second.p)).toBe(200);
    const runs = await call(s.url, 'GET', `/api/v1/audit?operation=delete_project&resource=${first.p}&result=ok`, { token: s.rootToken });
    expect(runs.json).toHaveLength(1);
  });
});
