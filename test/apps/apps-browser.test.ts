/**
 * The MCP Apps views in headless Chromium (issue 44): a host page built on the extension's
 * AppBridge mounts each view as a chat client does, relaying its tools/call to a real MCP client
 * of a real berth on the two real test engines. Each view renders real data soon after it is
 * mounted and follows a change made through REST (a stop, a restart's deployment, a migration,
 * a decision); the approval card's button opens the console's approval page. Screenshots go to
 * docs/img/apps-*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UI_EXTENSION, VIEW_MIME } from '../../src/mcp/apps/views.js';
import { browserMissing, launchBrowser } from '../helpers/browser.js';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployAppWithVolume, deployed, ensureSleeperImage, migrationEnded, registerEngines, type Platform } from '../e2e/support.js';
import { hostPage } from './host.js';

const IMG = path.resolve('docs/img');
/** The goals are 1 s to a first render and 2 s to an update; a loaded 2-core machine gets some slack on top. */
const FIRST_RENDER_MS = 1_000;
const UPDATE_MS = 2_000;
const SLACK_MS = 1_500;

type AnyClient = Client | V1Client;
type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ text?: string }> };

describe.skipIf(browserMissing || !enginesAvailable)('MCP Apps views in Chromium, on real engines', { timeout: 240_000 }, () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let browser: Browser;
  let app: { uuid: string };

  beforeAll(async () => {
    ensureSleeperImage(engines);
    [s, browser] = await Promise.all([startTestServer({ helperImage: ENGINE_IMAGE, apiRateLimit: 0 } as never), launchBrowser()]);
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    app = await deployAppWithVolume(api, p, `apps-view-${Date.now()}`);
  }, 180_000);
  afterAll(async () => {
    if (app) await api.req('DELETE', `/applications/${app.uuid}`);
    await browser?.close();
    await s?.stop();
  }, 120_000);

  async function connect(kind: 'v2-modern' | 'v1'): Promise<AnyClient> {
    const url = new URL('/mcp', s.url);
    const opts = { requestInit: { headers: { Authorization: `Bearer ${s.rootToken}`, 'X-Berth-Toolsets': 'all' } } };
    const capabilities = { extensions: { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME] } } } as never;
    if (kind === 'v1') {
      const c = new V1Client({ name: 'host', version: '1' }, { capabilities });
      await c.connect(new V1HttpTransport(url, opts));
      return c;
    }
    const c = new Client({ name: 'host', version: '1' }, { versionNegotiation: { mode: 'auto' }, capabilities });
    await c.connect(new StreamableHTTPClientTransport(url, opts));
    return c;
  }

  /** A host page whose bridge relays the views' tool calls to this client. */
  async function openHost(c: AnyClient): Promise<{ page: Page; problems: string[]; close(): Promise<void> }> {
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
    page.on('pageerror', (e) => problems.push(e.message));
    await page.exposeFunction('hostCallTool', (params: { name: string; arguments?: Record<string, unknown> }) => (c as Client).callTool(params));
    await page.setContent(await hostPage());
    return { page, problems, close: () => context.close() };
  }

  /** What a chat client does with a tool result: the tool's view, read from berth, mounted with the result. */
  async function mount(c: AnyClient, page: Page, id: string, tool: string, args: Record<string, unknown>, o: { theme?: 'light' | 'dark'; width?: number } = {}) {
    const listed = ((await c.listTools()) as { tools: Array<{ name: string; _meta?: { ui?: { resourceUri?: string } } }> }).tools.find((t) => t.name === tool)!;
    const uri = listed._meta!.ui!.resourceUri!;
    const html = ((await c.readResource({ uri })) as { contents: Array<{ text: string }> }).contents[0]!.text;
    const result = (await (c as Client).callTool({ name: tool, arguments: args })) as Result;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    await page.evaluate(([i, h, r, t, w]) => (globalThis as never as { mountView: (...a: unknown[]) => Promise<void> }).mountView(i, h, r, t, w), [
      id,
      html,
      result,
      o.theme ?? 'light',
      o.width ?? 640,
    ] as const);
    const frame = page.frameLocator(`#${id}`);
    await frame.locator('#root[data-rendered]').waitFor({ timeout: 10_000 });
    // Both clocks are the page's: from the host mounting the view to its first drawing.
    const firstRenderMs =
      Number(await frame.locator('#root').getAttribute('data-rendered')) - (await page.evaluate((i) => (globalThis as never as { mountedAt: Record<string, number> }).mountedAt[i]!, id));
    expect(firstRenderMs, `${id}: first render`).toBeLessThan(FIRST_RENDER_MS + SLACK_MS);
    return { frame, firstRenderMs, result };
  }

  const shot = async (page: Page, id: string, name: string) => {
    fs.mkdirSync(IMG, { recursive: true });
    await page.locator(`#${id}`).screenshot({ path: path.join(IMG, `apps-${name}.png`) });
  };

  /** At 400 px a view shows no horizontal scroll bar. */
  const fitsWidth = async (page: Page, id: string) => {
    const frame = (await page.locator(`#${id}`).elementHandle())!;
    const inner = (await frame.contentFrame())!;
    expect(await inner.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1')).toBe(true);
  };

  it('board, deployment, migration and approval views render real data and follow REST changes (2026 era)', async () => {
    const c = await connect('v2-modern');
    const host = await openHost(c);
    const timings: Record<string, number> = {};
    try {
      const { page } = host;
      // Board: the app as its engine runs it; a stop through REST shows within moments.
      const board = await mount(c, page, 'board', 'list_resources', {}, { width: 720 });
      timings.board_first = board.firstRenderMs;
      const row = board.frame.locator(`tr[data-uuid="${app.uuid}"]`);
      await row.getByText('running').waitFor();
      let t = Date.now();
      const stop = await api.ok('POST', `/applications/${app.uuid}/stop`);
      expect(stop).toBeDefined();
      await row.getByText(/exited|stopped/).waitFor({ timeout: 15_000 });
      timings.board_update = Date.now() - t;
      expect(timings.board_update).toBeLessThan(UPDATE_MS + SLACK_MS);
      await shot(page, 'board', 'board');

      // Deployment: a start queued through REST; the view streams its log to the end.
      const queued = (await api.ok('POST', `/deploy?uuid=${app.uuid}`)).deployments[0].deployment_uuid as string;
      const dep = await mount(c, page, 'deployment', 'get_deployment', { uuid: queued }, { theme: 'dark', width: 400 });
      timings.deployment_first = dep.firstRenderMs;
      const done = await deployed(api, queued);
      t = Date.now();
      await dep.frame.locator('.badge', { hasText: 'finished' }).waitFor({ timeout: 15_000 });
      timings.deployment_update = Date.now() - t;
      expect(timings.deployment_update).toBeLessThan(UPDATE_MS + SLACK_MS);
      const lastLine = String(done.logs).trim().split('\n').at(-1)!;
      await expect(dep.frame.locator('[data-log]').textContent()).resolves.toContain(lastLine);
      await fitsWidth(page, 'deployment');
      await shot(page, 'deployment', 'deployment');

      // Migration: moved to engine b through REST; the view follows it to its pause.
      const r = await api.ok('POST', `/applications/${app.uuid}/migrate`, { destination_uuid: p.destB, migrate_volumes: true });
      const migrations = await api.ok('GET', '/migrations');
      const mUuid = (migrations.items ?? migrations).find((m: { resource_uuid: string }) => m.resource_uuid === app.uuid).migration_uuid as string;
      expect(r).toBeDefined();
      const mig = await mount(c, page, 'migration', 'get_migration', { uuid: mUuid }, { width: 560 });
      timings.migration_first = mig.firstRenderMs;
      const ended = await migrationEnded(api, mUuid);
      expect(ended.status).toBe('finished');
      t = Date.now();
      await mig.frame.locator('[data-status]', { hasText: 'finished' }).waitFor({ timeout: 15_000 });
      timings.migration_update = Date.now() - t;
      expect(timings.migration_update).toBeLessThan(UPDATE_MS + SLACK_MS);
      await expect(mig.frame.locator('[data-pause]').textContent()).resolves.toMatch(/^\d+\.\d\d s$/);
      await expect(mig.frame.locator('[data-phase]').textContent()).resolves.toMatch(/done/);
      await shot(page, 'migration', 'migration');

      // Approval card: a held update (its free text is kept redacted); the button opens the console's
      // page for it; a decision made there shows on the card.
      const policy = await call(s.url, 'GET', '/api/v1/approvals/policy', { token: s.rootToken });
      expect(policy.json.rules).toEqual([]);
      expect((await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['update_project'] } })).status).toBe(200);
      const project = (await api.ok('POST', '/projects', { name: 'held project' })).uuid as string;
      const markup = '<b id="x">bold</b> & "quoted" <script>alert(1)</script>';
      const held = await call(s.url, 'PATCH', `/api/v1/projects/${project}`, { token: s.rootToken, body: { description: markup } });
      expect(held.status).toBe(202);
      const approvalUuid = held.json.approval.uuid as string;
      const card = await mount(c, page, 'approval', 'get_approval', { uuid: approvalUuid }, { width: 400 });
      timings.approval_first = card.firstRenderMs;
      await card.frame.getByText('update_project').first().waitFor();
      // The held arguments as the approval keeps them: free text redacted, ids shown.
      const shown = JSON.parse((await card.frame.locator('pre').textContent())!);
      expect(shown).toEqual({ uuid: project, description: '[redacted]' });
      expect(await card.frame.locator('#x, script:not(body > script)').count()).toBe(0);
      const button = card.frame.locator('[data-approve]');
      const href = await button.getAttribute('href');
      // The console's own page for this approval (the console names itself by localhost).
      expect(href).toBe(held.json.approval.approve_url);
      expect(new URL(href!).pathname).toBe(`/approvals/${approvalUuid}`);
      expect(new URL(href!).port).toBe(new URL(s.url).port);
      await button.click();
      await expect.poll(() => page.evaluate(() => (globalThis as never as { openedLinks: string[] }).openedLinks)).toEqual([href]);
      await fitsWidth(page, 'approval');
      await shot(page, 'approval', 'approval');
      t = Date.now();
      expect((await call(s.url, 'POST', `/api/v1/approvals/${approvalUuid}/deny`, { token: s.rootToken })).status).toBe(200);
      await card.frame.locator('[data-status]', { hasText: 'denied' }).waitFor({ timeout: 15_000 });
      timings.approval_update = Date.now() - t;
      expect(timings.approval_update).toBeLessThan(UPDATE_MS + SLACK_MS);

      expect(await page.locator('iframe').evaluateAll((fs) => fs.length)).toBe(4);
      expect(host.problems).toEqual([]);
      console.log('MCP Apps view timings (ms):', JSON.stringify(timings));
    } finally {
      await host.close();
      await c.close();
    }
  });

  it('a 2025-era HTTP client (SDK v1) shows the board and follows a change the same way', async () => {
    const c = await connect('v1');
    const host = await openHost(c);
    try {
      const board = await mount(c, host.page, 'board', 'list_resources', {}, { width: 400, theme: 'dark' });
      const row = board.frame.locator(`tr[data-uuid="${app.uuid}"]`);
      await row.waitFor();
      const name = `renamed (v1) #${Date.now()}`;
      const t = Date.now();
      await api.ok('PATCH', `/applications/${app.uuid}`, { name });
      await row.getByText(name, { exact: true }).waitFor({ timeout: 15_000 });
      expect(Date.now() - t).toBeLessThan(UPDATE_MS + SLACK_MS);
      await fitsWidth(host.page, 'board');
      await shot(host.page, 'board', 'board-dark-400');
      expect(host.problems).toEqual([]);
    } finally {
      await host.close();
      await c.close();
    }
  });
});
