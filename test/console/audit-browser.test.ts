import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import { auditedChange } from '../../src/core/audit/cli-door.js';
import { entryRow } from '../../src/core/audit/entry.js';
import { browserMissing, launchBrowser, openPage, screenshot } from '../helpers/browser.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The console's audit page in headless Chromium (issue 39, item 6): it fits a 1,280 px window
 * with ordinary entries and a large one (15,000 keys, a 100,000-character uuid), arguments folded
 * until opened; "Who" names the person, the door and the token or OAuth app (none for a person
 * in the console or at the CLI), and "from" the address ("this host" for the CLI).
 */
describe.skipIf(browserMissing)('the audit page in Chromium', { timeout: 120_000 }, () => {
  let s: TestServer;
  let browser: Browser;
  let writer: { id: number; token: string };
  const CLIENT = `https://agent.example.test/${'long-path/'.repeat(20)}client.json`;

  beforeAll(async () => {
    [s, browser] = await Promise.all([startTestServer(), launchBrowser()]);
    writer = await s.token({ permissions: ['read', 'write', 'deploy'], email: 'writer@example.test' });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
  });

  /** The newest entry's uuid (each step below makes one). */
  const newest = async () => (await s.db.selectFrom('audit_log').select('uuid').orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow()).uuid;

  it('fits 1,280 px whatever the entries, and says who, how and from where', async () => {
    const w = await openPage(browser, { width: 1280, height: 900 });
    const p = w.page;
    const uuids: Record<string, string> = {};

    // A token's ordinary change, and its large refused ones.
    expect((await call(s.url, 'POST', '/api/v1/projects', { token: writer.token, body: { name: 'ordinary project' } })).status).toBe(201);
    uuids.token = await newest();
    const many: Record<string, string> = {};
    for (let i = 0; i < 15_000; i++) many[`key_${i}`] = `a value that goes on for a while, number ${i}`;
    expect((await call(s.url, 'POST', '/api/v1/projects', { token: writer.token, body: many })).status).toBe(422);
    uuids.large = await newest();
    expect((await call(s.url, 'POST', '/api/v1/deploy', { token: writer.token, body: { uuid: 'u'.repeat(100_000), tag: 't'.repeat(5_000) } })).status).toBe(422);
    uuids.longTarget = await newest();

    // An OAuth app's call: its approval row (named after the app) and the entry the MCP door writes for it.
    const now = new Date().toISOString();
    const owner = (await s.db.selectFrom('users').select('id').where('email', '=', s.ownerEmail).executeTakeFirstOrThrow()).id;
    const grant = await s.db
      .insertInto('api_tokens')
      .values({
        name: 'Agent App',
        user_id: owner,
        team_id: s.rootTeamId,
        token_hash: `unused-${Math.random()}`,
        permissions: '["read","write"]',
        expires_at: null,
        last_used_at: null,
        created_at: now,
        oauth_grant_id: 'grant-audit-page',
        oauth_client_id: CLIENT,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await s.db
      .insertInto('audit_log')
      .values(
        entryRow({
          team_id: s.rootTeamId,
          user_id: owner,
          token_id: grant.id,
          oauth_client_id: CLIENT,
          source_ip: '10.1.2.3',
          door: 'mcp-http',
          operation: 'create_project',
          result: 'ok',
          status: 201,
          duration_ms: 4,
          arguments: '{"name":"by an app"}',
        }),
      )
      .execute();
    uuids.oauth = await newest();

    // The admin CLI's change (its own path to the log, on the same store).
    await auditedChange(s.db, async () => undefined, { operation: 'create_user', args: { email: 'cli-made@example.test' }, facts: () => ({ teamId: s.rootTeamId }) });
    uuids.cli = await newest();

    // A person in the console: signs in and makes a token there (a console entry).
    const link = await issueLoginLink(s.db, s.ownerEmail);
    await p.goto(linkUrl(s.url, link.token));
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL((u) => u.pathname === '/passkeys' || u.pathname === '/tokens');
    await p.goto(`${s.url}/tokens`);
    await p.getByLabel('Name', { exact: true }).fill('made in the console');
    await p.getByRole('checkbox', { name: /^read \(/ }).check();
    await p.getByRole('button', { name: 'Create token' }).click();
    await expect.poll(() => p.getByRole('heading', { level: 1 }).textContent()).toBe('Token created');
    uuids.console = await newest();

    await p.goto(`${s.url}/audit`);
    await expect.poll(() => p.locator('table.audit tbody').count()).toBe(6);
    const width = () => p.evaluate<number>('document.documentElement.scrollWidth');
    expect(await width()).toBeLessThanOrEqual(1280);
    await screenshot(p, 'audit');

    const whoOf = async (uuid: string) => (await p.locator(`tbody[data-uuid="${uuid}"] td[data-label="Who"]`).textContent())!.replace(/\s+/g, ' ').trim();
    expect(await whoOf(uuids.token!)).toBe(`writer@example.test REST API · token “test” #${writer.id} · from 127.0.0.1`);
    expect(await whoOf(uuids.large!)).toBe(`writer@example.test REST API · token “test” #${writer.id} · from 127.0.0.1`);
    expect(await whoOf(uuids.oauth!)).toBe(`${s.ownerEmail} MCP over HTTP · OAuth app “Agent App” (client ${CLIENT}) · from 10.1.2.3`);
    expect(await whoOf(uuids.cli!)).toBe('the operator admin CLI · from this host');
    expect(await whoOf(uuids.console!)).toBe(`${s.ownerEmail} console · from 127.0.0.1`);
    const table = await p.locator('table.audit').textContent();
    expect(table).not.toContain('null');
    expect(table).not.toContain('from ?');

    // Folded until asked; opened, the large entry's arguments (cut, with the size sent) still fit.
    const large = p.locator(`tbody[data-uuid="${uuids.large}"] details`);
    expect(await large.getAttribute('open')).toBeNull();
    const summary = await large.locator('summary').textContent();
    expect(summary).toMatch(/^Arguments: cut from [\d,]+ bytes sent$/);
    await large.locator('summary').click();
    await expect.poll(() => large.locator('pre').textContent()).toContain('"[cut]"');
    await p.locator(`tbody[data-uuid="${uuids.longTarget}"] summary`).click();
    await expect.poll(() => p.locator(`tbody[data-uuid="${uuids.longTarget}"] .targets`).textContent()).toContain(`Targets: ${'u'.repeat(64)}…`);
    expect(await width()).toBeLessThanOrEqual(1280);
    await screenshot(p, 'audit-open');

    await w.context.close();
    expect(w.problems).toEqual([]);
  });
});
