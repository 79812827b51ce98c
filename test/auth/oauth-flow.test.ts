/**
 * The MCP authorization flow end to end against a real `berth serve` (in-process, real HTTP):
 * the MCP SDK client's OAuth provider discovers berth (RFC 9728, RFC 8414), registers (RFC 7591),
 * sends the person to the consent page, exchanges the code (PKCE S256), lists tools, refreshes
 * (rotation), and stops working once the grant is revoked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import * as admin from '../../src/core/admin.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { atLocalhost, Browser, consentForm, MemoryOAuthProvider, signIn } from '../helpers/oauth.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

let server: TestServer;

beforeAll(async () => {
  server = atLocalhost(await startTestServer());
});
afterAll(async () => {
  await server?.stop();
});

async function connect(provider: MemoryOAuthProvider): Promise<Client> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: provider }));
  return client;
}

/** Runs the SDK up to the redirect, then a signed-in browser consents as shown; returns the redirect's query. */
async function authorize(provider: MemoryOAuthProvider, email: string, choose?: (f: ReturnType<typeof consentForm>) => URLSearchParams): Promise<URLSearchParams> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: provider });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await expect(client.connect(transport)).rejects.toThrow(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  const browser = new Browser(server.url);
  await signIn(browser, server.db, email);
  const page = await browser.go('GET', provider.authorizationUrl!.toString());
  expect(page.status).toBe(200);
  const form = consentForm(page);
  const fields = choose ? choose(form) : new URLSearchParams([['csrf', form.csrf], ['team', form.team], ['decision', 'approve'], ...form.checked.map((p) => ['permission', p] as [string, string])]);
  const back = await browser.go('POST', new URL(form.action, server.url).toString(), fields);
  expect(back.status, back.text.slice(0, 500)).toBe(303);
  expect(back.location!.startsWith(REDIRECT)).toBe(true);
  const query = new URL(back.location!).searchParams;
  if (query.get('code')) await transport.finishAuth(query.get('code')!);
  return query;
}

describe('OAuth 2.1 for /mcp', () => {
  it('answers 401 with the resource metadata URL, and publishes RFC 9728 and RFC 8414 metadata', async () => {
    const r = await call(server.url, 'POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    expect(r.status).toBe(401);
    expect(r.json).toEqual({ message: 'Unauthenticated.' });
    expect(r.headers['www-authenticate']).toBe(`Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`);

    const bad = await call(server.url, 'POST', '/mcp', { token: 'x'.repeat(43), body: {} });
    expect(bad.status).toBe(401);
    expect(bad.json).toEqual({ message: 'Invalid token.' });
    expect(bad.headers['www-authenticate']).toBe(`Bearer error="invalid_token", resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`);

    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const prm = await call(server.url, 'GET', path);
      expect(prm.status).toBe(200);
      expect(prm.json).toMatchObject({ resource: `${server.url}/mcp`, authorization_servers: [server.url], scopes_supported: ['read', 'read:sensitive', 'write', 'deploy', 'root'] });
    }
    const as = await call(server.url, 'GET', '/.well-known/oauth-authorization-server');
    expect(as.status).toBe(200);
    expect(as.json).toMatchObject({
      issuer: server.url,
      authorization_endpoint: `${server.url}/oauth/authorize`,
      token_endpoint: `${server.url}/oauth/token`,
      registration_endpoint: `${server.url}/oauth/register`,
      revocation_endpoint: `${server.url}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      client_id_metadata_document_supported: true,
    });
    expect(as.json.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
    expect(as.json.grant_types_supported).not.toContain('implicit');

    // API tokens keep working on /mcp, with no OAuth in the way.
    const api = await call(server.url, 'POST', '/mcp', { token: server.rootToken, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    expect(api.status).toBe(200);
  });

  it('runs discovery → registration → consent → token → tools/list → refresh → revoke with the SDK client', async () => {
    const provider = new MemoryOAuthProvider(REDIRECT);
    const query = await authorize(provider, server.ownerEmail);
    expect(query.get('state')).toBe(provider.lastState);
    expect(provider.info?.client_id).toBeTruthy();
    expect(provider.saved?.access_token).toBeTruthy();
    expect(provider.saved?.refresh_token).toBeTruthy();

    const client = await connect(provider);
    const listed = await client.listTools();
    expect(listed.tools.length).toBeGreaterThan(0);
    const teams = await client.callTool({ name: 'call_operation', arguments: { name: 'list_teams', arguments: {} } });
    expect(teams.isError).toBeFalsy();
    await client.close();

    // The approval is a token of the team, named after the client.
    const rows = await admin.listTokens(server.db, String(server.rootTeamId));
    const row = rows.find((r) => r.name === 'Test Agent');
    expect(row).toBeDefined();

    // OAuth tokens are for /mcp only (audience-bound): the REST API refuses them.
    const rest = await call(server.url, 'GET', '/api/v1/teams', { token: provider.saved!.access_token });
    expect(rest.status).toBe(401);

    // Refresh rotates the refresh token; the old one, replayed, revokes the whole grant.
    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: `${server.url}/mcp` })).toBe('AUTHORIZED');
    const after = provider.saved!;
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.refresh_token).not.toBe(before.refresh_token);
    const again = await connect(provider);
    expect((await again.listTools()).tools.length).toBeGreaterThan(0);
    await again.close();

    // Revoked by the person (berth token revoke): the next request is refused.
    await admin.revokeToken(server.db, row!.id);
    const refused = await call(server.url, 'POST', '/mcp', {
      token: after.access_token,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      headers: { accept: 'application/json, text/event-stream' },
    });
    expect(refused.status).toBe(401);
    // …and the refresh token went with the grant.
    const refresh = await call(server.url, 'POST', '/oauth/token', {
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: after.refresh_token!, client_id: provider.info!.client_id }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(refresh.status).toBe(400);
    expect(refresh.json.error).toBe('invalid_grant');
  });

  it('charges registration and token requests to the source address like any API request', async () => {
    const limited = atLocalhost(await startTestServer({ apiRateLimit: 2 }));
    try {
      const register = () => call(limited.url, 'POST', '/oauth/register', { body: { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' } });
      expect((await register()).status).toBe(201);
      expect((await register()).status).toBe(201);
      const third = await register();
      expect(third.status).toBe(429);
      expect(third.json).toEqual({ message: 'Too many requests.' });
      expect(third.headers['retry-after']).toBeDefined();
    } finally {
      await limited.stop();
    }
  });
});
