import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from './server.js';

/** Debian's chromium (CI installs it with .ci/run); CHROMIUM_PATH names another. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Without CI a machine may lack Chromium and skip; in CI it must be there (the test then fails). */
export const browserMissing = !process.env.CI && !fs.existsSync(CHROMIUM_PATH);

export const ARTIFACTS = path.resolve('test-artifacts', 'console');

/** One headless Chromium for a whole test file (launching costs about a second). */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // Root in a container: no user namespaces for the sandbox; /dev/shm may be small.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** beforeAll/afterAll: a berth server and one Chromium for the enclosing describe (read them inside tests). */
export function useServerAndBrowser(): { readonly s: TestServer; readonly browser: Browser } {
  const held = {} as { s: TestServer; browser: Browser };
  beforeAll(async () => {
    [held.s, held.browser] = await Promise.all([startTestServer(), launchBrowser()]);
  }, 120_000);
  afterAll(async () => {
    await held.browser?.close();
    await held.s?.stop();
  });
  return held;
}

export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** Every console error and uncaught page error so far; a test expects it empty. */
  problems: string[];
}

/** A fresh context (its own cookies) and page, recording console and page errors. */
export async function openPage(browser: Browser, viewport = { width: 1100, height: 800 }): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page: ${err.message}`));
  return { context, page, problems };
}

/** Saves a full-page screenshot as test-artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * A virtual passkey authenticator on this page (Chromium's WebAuthn domain over CDP): it answers
 * create() and get() at once, as a platform authenticator with user verification would.
 */
export async function addVirtualAuthenticator(page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { cdp, authenticatorId };
}
