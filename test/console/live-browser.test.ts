import { describe, expect, it } from 'vitest';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import { browserMissing, openPage, screenshot, useServerAndBrowser } from '../helpers/browser.js';
import { call } from '../helpers/server.js';

/**
 * The live pages in headless Chromium: the resource list gains a resource created through the
 * API and shows it renamed, without a reload (the page's own script
 * and EventSource under the console's CSP; any console or page error fails the test).
 */
describe.skipIf(browserMissing)('live views in Chromium', { timeout: 120_000 }, () => {
  const env = useServerAndBrowser();

  async function ok(method: string, path: string, body?: unknown) {
    const { s } = env;
    const r = await call(s.url, method, `/api/v1${path}`, { token: s.rootToken, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.json;
  }

  it('the resource list updates in place as an app is created and renamed; its deployment page shows the log', async () => {
    const { s, browser } = env;
    const server = (await ok('POST', '/servers', { name: 'live-one', ip: '10.0.0.1' })).uuid;
    const project = (await ok('POST', '/projects', { name: 'live project' })).uuid;
    const w = await openPage(browser);
    try {
      const { page: p } = w;
      const link = await issueLoginLink(s.db, s.ownerEmail);
      await p.goto(linkUrl(s.url, link.token));
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.waitForURL((u) => u.pathname === '/passkeys' || u.pathname === '/tokens');
      await p.goto(`${s.url}/resources`);
      await p.getByText('Live: updates as they happen.').waitFor();
      await expect(p.getByText('No resources yet.').isVisible()).resolves.toBe(true);
      // A mark that a reload would wipe.
      await p.evaluate('window.stayed = true');

      const app = (
        await ok('POST', '/applications/dockerimage', {
          project_uuid: project,
          server_uuid: server,
          environment_name: 'production',
          name: 'to-be-watched',
          docker_registry_image_name: 'nginx',
          docker_registry_image_tag: '1.27',
          ports_exposes: '80',
        })
      ).uuid;
      const row = p.locator(`tr[data-id="${app}"]`);
      await row.waitFor();
      await expect(row.getByRole('cell').nth(5).textContent()).resolves.not.toBe('running');
      // The server is record-only: the deploy fails (nothing ran) and the status stays.
      const deployment = (await ok('POST', `/deploy?uuid=${app}`)).deployments[0].deployment_uuid;
      await ok('PATCH', `/applications/${app}`, { name: 'watched-web' });
      await row.getByRole('cell', { name: 'watched-web', exact: true }).waitFor();
      await expect(row.getByRole('cell').nth(5).textContent()).resolves.not.toBe('running');
      await expect(p.evaluate<boolean>('window.stayed === true')).resolves.toBe(true);
      await screenshot(p, 'live-resources');

      await row.getByRole('link', { name: 'watched-web' }).click();
      await p.waitForURL(`${s.url}/resources/${app}`);
      await p.getByRole('link', { name: deployment }).click();
      await p.waitForURL(`${s.url}/deployments/${deployment}`);
      await p.getByText('Finished: nothing more will change.').waitFor();
      await expect(p.locator('[data-live-log]').textContent()).resolves.toContain('did not act on any engine');
      await screenshot(p, 'live-deployment');
    } finally {
      await w.context.close();
    }
    expect(w.problems).toEqual([]);
  });
});
