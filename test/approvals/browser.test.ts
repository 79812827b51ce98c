import { describe, expect, it } from 'vitest';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import { browserMissing, openPage, screenshot, useServerAndBrowser } from '../helpers/browser.js';
import { call } from '../helpers/server.js';

/**
 * A person approves an agent's held call in the console, in headless Chromium: the queue lists
 * it, its page shows the operation, target and redacted arguments, and "Approve and run" runs it.
 * Screenshots go to test-artifacts/console/.
 */
describe.skipIf(browserMissing)('approving in the console (Chromium)', { timeout: 120_000 }, () => {
  const env = useServerAndBrowser();

  it('queue → approval page → approve: the call ran once', async () => {
    const { s, browser } = env;
    expect((await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['delete_project'] } })).status).toBe(200);
    const p = (await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'in the browser' } })).json.uuid as string;
    const held = await call(s.url, 'DELETE', `/api/v1/projects/${p}`, { token: s.rootToken });
    expect(held.status).toBe(202);
    const uuid = held.json.approval.uuid as string;

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
    expect((await call(s.url, 'GET', `/api/v1/projects/${p}`, { token: s.rootToken })).status).toBe(404);
  });
});
