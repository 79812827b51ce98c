/**
 * What a Coolify client checks first: GET /api/v1/health without a token, and /api/v1/version
 * answering the Coolify API version berth matches (as plain text); berth's own version is in the
 * X-Berth-Version header, openapi.json and get_version's berth_version.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BERTH_VERSION, COOLIFY_API_VERSION } from '../../src/core/operations/platform.js';
import { httpClient } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe('version and health', () => {
  it('GET /api/v1/health answers OK without a token, like /api/health', async () => {
    for (const path of ['/api/v1/health', '/api/health']) {
      const r = await call(s.url, 'GET', path);
      expect({ path, status: r.status, text: r.text, type: r.headers['content-type'] }).toEqual({ path, status: 200, text: 'OK', type: 'text/plain; charset=utf-8' });
    }
  });

  it('GET /api/v1/version is the Coolify API version as text; berth’s own is in a header and openapi.json', async () => {
    expect(COOLIFY_API_VERSION).toMatch(/^4\.\d+\.\d+/);
    const { token } = await s.token({ permissions: ['read'] });
    const r = await call(s.url, 'GET', '/api/v1/version', { token });
    expect(r.status).toBe(200);
    expect(r.text).toBe(COOLIFY_API_VERSION);
    expect(r.headers['x-berth-version']).toBe(BERTH_VERSION);
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token })).headers['x-berth-version']).toBe(BERTH_VERSION);
    const doc = (await call(s.url, 'GET', '/api/v1/openapi.json')).json;
    expect(doc.info).toMatchObject({ version: BERTH_VERSION, 'x-coolify-api-version': COOLIFY_API_VERSION });
    // Still a token's business, as in Coolify.
    expect((await call(s.url, 'GET', '/api/v1/version')).status).toBe(401);
  });

  it('get_version over MCP carries both', async () => {
    const c = await httpClient('v2-modern', s.url, s.rootToken);
    try {
      expect((await c.callTool('get_version')).structuredContent).toEqual({ version: COOLIFY_API_VERSION, berth_version: BERTH_VERSION });
    } finally {
      await c.close();
    }
  });
});
