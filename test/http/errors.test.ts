import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe('contract errors', () => {
  it('unknown route → 404 "Not found."', async () => {
    // (`/` is the console's: it sends a browser to sign in.)
    for (const path of ['/api/v1/nope', '/api/v2/teams', '/nope', '/api/v1/teams/1/nope']) {
      const r = await call(s.url, 'GET', path, { token: s.rootToken });
      expect(r.status, path).toBe(404);
      expect(r.text).toBe('{"message":"Not found."}');
    }
  });

  it('wrong method on a known route → 405 with Allow', async () => {
    const r = await call(s.url, 'DELETE', '/api/v1/teams/current', { token: s.rootToken });
    expect(r.status).toBe(405);
    expect(r.json).toEqual({ message: 'Method not allowed.' });
    expect(r.headers.allow).toBe('GET, HEAD');
    const e = await call(s.url, 'GET', '/api/v1/enable', { token: s.rootToken });
    expect(e.status).toBe(405);
    expect(e.headers.allow).toBe('POST');
  });

  it('invalid JSON, a non-object body and a non-JSON content type are 422 with the contract shape', async () => {
    const cases = [
      { body: '{bad', headers: { 'content-type': 'application/json' } },
      { body: '[1,2]', headers: { 'content-type': 'application/json' } },
      { body: '"text"', headers: { 'content-type': 'application/json' } },
      { body: 'content=hello', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    ];
    for (const c of cases) {
      const r = await call(s.url, 'POST', '/api/feedback', { token: s.rootToken, ...c });
      expect(r.status, c.body).toBe(422);
      expect(r.json.message).toBe('Validation error.');
      expect(Array.isArray(r.json.errors.body)).toBe(true);
    }
  });

  it('validation errors map every field to an array of messages, unknown fields included', async () => {
    const r = await call(s.url, 'POST', '/api/feedback', { token: s.rootToken, body: { content: 'short', id: 5, team_id: 1 } });
    expect(r.status).toBe(422);
    expect(Object.keys(r.json.errors).sort()).toEqual(['content', 'id', 'team_id']);
    for (const v of Object.values(r.json.errors)) {
      expect(Array.isArray(v)).toBe(true);
      expect((v as unknown[]).every((m) => typeof m === 'string')).toBe(true);
    }
  });

  it('order of checks: authentication before validation and before the route’s permission', async () => {
    expect((await call(s.url, 'POST', '/api/feedback', { body: '{bad', headers: { 'content-type': 'application/json' } })).status).toBe(401);
    const reader = await s.token({ permissions: ['read'] });
    // Permission before validation: a reader posting junk to a root route gets 403, not 422.
    const r = await call(s.url, 'PATCH', '/api/v1/settings', { token: reader.token, body: { allowed_ips: 'junk' } });
    expect(r.status).toBe(403);
  });

  it('health answers OK without authentication', async () => {
    const r = await call(s.url, 'GET', '/api/health');
    expect(r.status).toBe(200);
    expect(r.text).toBe('OK');
  });

  it('responses are JSON', async () => {
    const r = await call(s.url, 'GET', '/api/v1/teams', { token: s.rootToken });
    expect(r.headers['content-type']).toMatch(/^application\/json/);
  });
});
