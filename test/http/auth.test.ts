import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const INVALID = '{"message":"Invalid token."}';
const current = (token?: string, headers?: Record<string, string>) => call(s.url, 'GET', '/api/v1/teams/current', { token, headers });

describe('authentication', () => {
  it('a valid token reaches the team it is bound to', async () => {
    const r = await current(s.rootToken);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ id: s.rootTeamId, name: 'Root Team', personal_team: false });
    expect(Object.keys(r.json).sort()).toEqual(['created_at', 'description', 'id', 'name', 'personal_team', 'updated_at']);
  });

  it('no Authorization header is 401 Unauthenticated with WWW-Authenticate: Bearer', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: 'Basic dXNlcjpwYXNz' }, { authorization: 'Bearer' }]) {
      const r = await current(undefined, headers);
      expect(r.status).toBe(401);
      expect(r.text).toBe('{"message":"Unauthenticated."}');
      expect(r.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });

  it('malformed, unknown-id and wrong-secret tokens get one identical 401 body', async () => {
    const [id, secret] = s.rootToken.split('|') as [string, string];
    const bad = ['garbage', `${id}`, `${id}|`, `|${secret}`, `${id}|${secret}x`, `${id}|${secret.slice(0, -1)}`, `999999|${secret}`, `0${id}|${secret}`, `${id}||${secret}`];
    for (const token of bad) {
      const r = await current(token);
      expect(r.status, token).toBe(401);
      expect(r.text).toBe(INVALID);
    }
  });

  it('an expired token is refused with the same body', async () => {
    const t = await s.token({ permissions: ['read'], expires: '7d' });
    expect((await current(t.token)).status).toBe(200);
    await s.db
      .updateTable('api_tokens')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', t.id)
      .execute();
    const r = await current(t.token);
    expect(r.status).toBe(401);
    expect(r.text).toBe(INVALID);
  });

  it('deleting a token revokes it on the very next request', async () => {
    const t = await s.token({ permissions: ['read'] });
    expect((await current(t.token)).status).toBe(200);
    await admin.revokeToken(s.db, t.id);
    const r = await current(t.token);
    expect(r.status).toBe(401);
    expect(r.text).toBe(INVALID);
  });

  it('a token stops working when its user leaves the team', async () => {
    const email = `leaver-${Date.now()}@example.test`;
    const t = await s.token({ permissions: ['read'], email });
    expect((await current(t.token)).status).toBe(200);
    await admin.removeMember(s.db, { team: String(s.rootTeamId), email });
    expect((await current(t.token)).text).toBe(INVALID);
  });

  it('records last_used_at', async () => {
    const t = await s.token({ permissions: ['read'] });
    const before = await s.db.selectFrom('api_tokens').select('last_used_at').where('id', '=', t.id).executeTakeFirstOrThrow();
    expect(before.last_used_at).toBeNull();
    await current(t.token);
    const after = await s.db.selectFrom('api_tokens').select('last_used_at').where('id', '=', t.id).executeTakeFirstOrThrow();
    expect(Date.parse(after.last_used_at!)).toBeGreaterThan(Date.now() - 10_000);
  });

  it('stores only a SHA-256 hash of the secret', async () => {
    const t = await s.token({ permissions: ['read'] });
    const secret = t.token.split('|')[1]!;
    expect(secret.length).toBeGreaterThanOrEqual(40);
    const row = await s.db.selectFrom('api_tokens').selectAll().where('id', '=', t.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(secret);
    const { createHash } = await import('node:crypto');
    expect(row.token_hash).toBe(createHash('sha256').update(secret).digest('hex'));
  });
});
