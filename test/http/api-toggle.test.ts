import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());
afterEach(async () => {
  await call(s.url, 'POST', '/api/v1/enable', { token: s.rootToken });
});

const DISABLED = '{"message":"API is disabled."}';

describe('API toggle', () => {
  it('disable turns every API request into 403 "API is disabled." until enable', async () => {
    const reader = await s.token({ permissions: ['read'] });
    const off = await call(s.url, 'POST', '/api/v1/disable', { token: s.rootToken });
    expect(off.status).toBe(200);
    expect(off.json).toEqual({ message: 'API disabled.' });

    for (const [method, path, token, body] of [
      ['GET', '/api/v1/teams', reader.token],
      ['GET', '/api/v1/teams/current', s.rootToken],
      ['GET', '/api/v1/teams/current/members', reader.token],
      ['POST', '/api/v1/disable', s.rootToken],
      ['GET', '/api/v1/settings', s.rootToken],
      ['POST', '/api/feedback', reader.token, { content: 'feedback while disabled' }],
    ] as const) {
      const r = await call(s.url, method, path, { token, body });
      expect(r.status, path).toBe(403);
      expect(r.text).toBe(DISABLED);
    }
    // Authentication still comes first: a bad token is 401, not 403.
    expect((await call(s.url, 'GET', '/api/v1/teams', { token: '1|nope' })).status).toBe(401);
    // Health is not part of the API toggle.
    expect((await call(s.url, 'GET', '/api/health')).text).toBe('OK');

    const on = await call(s.url, 'POST', '/api/v1/enable', { token: s.rootToken });
    expect(on.status).toBe(200);
    expect(on.json).toEqual({ message: 'API enabled.' });
    expect((await call(s.url, 'GET', '/api/v1/teams', { token: reader.token })).status).toBe(200);
  });

  it('enable/disable need root: other permissions get 403 naming root', async () => {
    const writer = await s.token({ permissions: ['read', 'write', 'deploy', 'read:sensitive'] });
    for (const path of ['/api/v1/enable', '/api/v1/disable']) {
      const r = await call(s.url, 'POST', path, { token: writer.token });
      expect(r.status).toBe(403);
      expect(r.json).toEqual({ message: 'Missing required permissions: root', missing_permissions: ['root'] });
    }
  });

  it('a root token of another team may not flip the instance-wide toggle', async () => {
    const other = await s.team('Other Team');
    const r = await call(s.url, 'POST', '/api/v1/disable', { token: other.rootToken });
    expect(r.status).toBe(403);
    expect(r.json).toEqual({ message: "Only a token of the instance's root team may do this." });
    expect((await call(s.url, 'GET', '/api/v1/teams', { token: other.rootToken })).status).toBe(200);
  });

  it('while disabled, a non-root token cannot enable it', async () => {
    await call(s.url, 'POST', '/api/v1/disable', { token: s.rootToken });
    const reader = await s.token({ permissions: ['read'] });
    const r = await call(s.url, 'POST', '/api/v1/enable', { token: reader.token });
    expect(r.status).toBe(403);
    expect(r.json.missing_permissions).toEqual(['root']);
  });

  it('accepts POST with no body, an empty JSON body or {} and rejects unknown fields', async () => {
    for (const opts of [{}, { body: '', headers: { 'content-type': 'application/json' } }, { body: {} }]) {
      expect((await call(s.url, 'POST', '/api/v1/enable', { token: s.rootToken, ...opts })).status).toBe(200);
    }
    const r = await call(s.url, 'POST', '/api/v1/enable', { token: s.rootToken, body: { force: true } });
    expect(r.status).toBe(422);
    expect(r.json).toEqual({ message: 'Validation error.', errors: { force: ['This field is not allowed.'] } });
  });
});
