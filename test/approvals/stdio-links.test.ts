import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startServer } from '../../src/serve.js';
import { recordServedUrl, servedUrl } from '../../src/store/served-url.js';
import { stdioClient, type AnyClient } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';

/**
 * Approval links from a stdio agent (issue 39): `berth mcp` serves no HTTP, so the console page
 * its held calls name is BERTH_PUBLIC_URL, else the address a running `berth serve` on the same
 * store recorded (the newest of those running, read again at every call), else the default
 * (http://localhost:8000). Real servers on ephemeral ports, a real `berth mcp` child.
 */
describe('approve_url from berth mcp on stdio', { timeout: 90_000 }, () => {
  let s: TestServer;
  const clients: AnyClient[] = [];

  beforeAll(async () => {
    s = await startTestServer();
    const set = await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['delete_project'] } });
    expect(set.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await s?.stop();
  });

  const portOf = (url: string) => new URL(url).port;
  /** The approve_url a held delete of a new project answers with, wherever the answer puts it. */
  async function heldLink(c: AnyClient): Promise<string> {
    // Made through the agent itself: the test stops the serves it names.
    const made = await c.callTool('create_project', { name: `held-${Math.random()}` });
    const p = (made.structuredContent as { uuid: string }).uuid;
    const r = await c.callTool('delete_project', { uuid: p });
    const text = JSON.stringify(r);
    const m = /(https?:\/\/[^"\s\\]+)\/approvals\/[a-z0-9]{24}/.exec(text);
    if (!m) throw new Error(`no approve_url in ${text}`);
    return m[1]!;
  }
  async function open(env: Record<string, string> = {}): Promise<AnyClient> {
    const c = await stdioClient('v2-legacy', s.dataDir, s.rootToken, [], env);
    clients.push(c);
    return c;
  }

  it('names the running serve, follows a second one and its stop, and falls back to the default when none runs', async () => {
    const c = await open();
    expect(await heldLink(c)).toBe(`http://localhost:${portOf(s.url)}`);

    // A second serve on the same store (another port): the newest running one is named...
    const second = await startServer(loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: s.dataDir, databaseUrl: storeUrlFor(s.dataDir), host: '127.0.0.1', port: 0 }), () => {});
    expect(await heldLink(c)).toBe(`http://localhost:${portOf(second.url)}`);
    // ...and when it stops, the one still running, in the same agent session.
    await second.close();
    expect(await heldLink(c)).toBe(`http://localhost:${portOf(s.url)}`);

    // No serve running: the default address.
    await s.close();
    expect(await heldLink(c)).toBe('http://localhost:8000');
  });

  it("BERTH_PUBLIC_URL in the agent's environment comes first", async () => {
    await recordServedUrl(s.db, 'a-running-serve', 'http://localhost:47001');
    const c = await open({ BERTH_PUBLIC_URL: 'https://berth.example.test/' });
    expect(await heldLink(c)).toBe('https://berth.example.test');
  });

  it('a start at an address replaces what a crashed serve left there', async () => {
    await recordServedUrl(s.db, 'crashed', 'http://localhost:47002');
    await recordServedUrl(s.db, 'restarted', 'http://localhost:47002');
    const rows = await s.db.selectFrom('settings').select('key').where('key', 'like', 'served_url:%').execute();
    expect(rows.map((r) => r.key).sort()).toEqual(['served_url:a-running-serve', 'served_url:restarted']);
    expect(await servedUrl(s.db)).toBe('http://localhost:47002');
  });
});
