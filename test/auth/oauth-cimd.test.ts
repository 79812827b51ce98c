/**
 * Client ID Metadata Documents: a client whose client_id is an https URL is known by the JSON
 * document at that URL, fetched through berth's guarded outbound client. Loopback is reachable
 * only because the operator said so (BERTH_OUTBOUND_ALLOWED_TARGETS); without that, the same
 * request is refused before any connection. `berth serve` runs as a process of its own here, so
 * that it trusts the test's certificate authority (NODE_EXTRA_CA_CERTS is read at start).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { atLocalhost, Browser, MemoryOAuthProvider, pkce } from '../helpers/oauth.js';

const REDIRECT = 'http://127.0.0.1:9/cimd-callback';

let dir: string;
let metadata: https.Server;
let base: string;
const hits: string[] = [];
let served: ServeProcess;
let guarded: TestServer;

beforeAll(async () => {
  dir = tempDir('berth-cimd-');
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
    { stdio: 'ignore' },
  );
  metadata = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
    hits.push(req.url ?? '');
    const id = `${base}${req.url}`;
    const doc = {
      client_id: req.url === '/wrong.json' ? `${base}/other.json` : id,
      client_name: 'CIMD Agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
  });
  await new Promise<void>((r) => metadata.listen(0, '127.0.0.1', r));
  base = `https://127.0.0.1:${(metadata.address() as { port: number }).port}`;
  [served, guarded] = await Promise.all([
    spawnServe(path.join(dir, 'data'), { NODE_EXTRA_CA_CERTS: cert, BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' }, 50_000).then(atLocalhost),
    startTestServer().then(atLocalhost),
  ]);
}, 90_000);

afterAll(async () => {
  await Promise.all([served?.stop(), guarded?.stop()]);
  metadata?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function authUrl(server: string, clientId: string, redirect = REDIRECT): string {
  const u = new URL('/oauth/authorize', server);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirect,
    scope: 'read',
    state: 's',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  }))
    u.searchParams.set(k, v);
  return u.toString();
}

describe('Client ID Metadata Documents', () => {
  it('resolves an https client_id through the document it names, up to the person', async () => {
    const before = hits.length;
    const browser = new Browser(served.url);
    const start = await browser.send('GET', authUrl(served.url, `${base}/agent.json`));
    expect(start.status).toBe(303);
    expect(start.location).toMatch(new RegExp(`^${served.url}/oauth/consent/`));
    // Nobody is signed in to this browser: the consent page sends it to sign in first.
    const consent = await browser.send('GET', start.location!);
    expect(consent.status).toBe(303);
    expect(consent.location).toMatch(/\/login\?next=%2Foauth%2Fconsent%2F/);
    expect(hits.slice(before)).toEqual(['/agent.json']);
  });

  it('refuses a redirect URI the document does not list, and a document naming another client_id', async () => {
    const browser = new Browser(served.url);
    const mismatch = await browser.send('GET', authUrl(served.url, `${base}/agent.json`, 'http://127.0.0.1:9/elsewhere'));
    expect(mismatch.status).toBe(400);
    expect(mismatch.location).toBeUndefined();
    const wrong = await browser.send('GET', authUrl(served.url, `${base}/wrong.json`));
    expect(wrong.status).toBe(400);
    expect(wrong.location).toBeUndefined();
  });

  it('the MCP SDK client uses its metadata URL as client_id when berth says it may', async () => {
    const provider = new MemoryOAuthProvider(REDIRECT, {}, `${base}/agent.json`);
    const client = new Client({ name: 'cimd-test', version: '1.0.0' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}/mcp`), { authProvider: provider }))).rejects.toThrow(UnauthorizedError);
    expect(provider.authorizationUrl?.searchParams.get('client_id')).toBe(`${base}/agent.json`);
    expect(provider.authorizationUrl?.searchParams.get('resource')).toBe(`${served.url}/mcp`);
  });

  it('without the operator allowing loopback, berth does not fetch the document at all', async () => {
    const before = hits.length;
    const page = await new Browser(guarded.url).send('GET', authUrl(guarded.url, `${base}/agent.json`));
    expect(page.status).toBe(400);
    expect(page.location).toBeUndefined();
    expect(page.text).toContain('invalid_client');
    expect(hits.length).toBe(before);
  });
});
