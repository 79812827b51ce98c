import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBerth } from '../helpers/cli-run.js';
import { browse, csrfOf, Jar } from '../helpers/console.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';

/** `berth login-link` prints a link (and nothing else) on stdout that signs the person in once; stderr says where its address came from. */
describe('berth login-link', { timeout: 60_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.stop());

  it('prints a one-time link to the public URL that signs in once', async () => {
    const r = await runBerth(['login-link', '--email', s.ownerEmail.toUpperCase(), '--data', s.dataDir], {
      cwd: s.dataDir,
      env: { ...storeEnv(s.dataDir), BERTH_PUBLIC_URL: 'https://berth.example.test/' },
    });
    // stdout is the link alone; stderr says where its address came from.
    expect(r.stderr).toBe('(address from BERTH_PUBLIC_URL; --url sets it)\n');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^https:\/\/berth\.example\.test\/login\/link\?token=[A-Za-z0-9_-]{43}\n$/);
    const url = new URL(r.stdout.trim());
    const jar = new Jar();
    const page = await browse(s.url, jar, 'GET', url.pathname + url.search);
    expect(page.status).toBe(200);
    const token = url.searchParams.get('token')!;
    expect((await browse(s.url, jar, 'POST', '/login/link', { _csrf: csrfOf(page.text), token })).status).toBe(303);
    expect((await browse(s.url, new Jar(), 'GET', url.pathname + url.search)).status).toBe(400);
  });

  it('defaults to localhost on the configured port, prints JSON with --json, and refuses an unknown person', async () => {
    const env = { ...storeEnv(s.dataDir), PORT: '8123' };
    const plain = await runBerth(['login-link', '--email', s.ownerEmail], { cwd: s.dataDir, env: { ...env, BERTH_DATA: s.dataDir } });
    expect(plain.stdout).toMatch(/^http:\/\/localhost:8123\/login\/link\?token=/);
    const json = await runBerth(['login-link', '--email', s.ownerEmail, '--json', '--data', s.dataDir], { cwd: s.dataDir, env });
    expect(JSON.parse(json.stdout)).toMatchObject({ email: s.ownerEmail, url: expect.stringMatching(/token=/), expires_at: expect.any(String) });
    const unknown = await runBerth(['login-link', '--email', 'nobody@example.test', '--data', s.dataDir], { cwd: s.dataDir, env });
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toBe('berth: email: No user with e-mail nobody@example.test.\n');
  });
});
