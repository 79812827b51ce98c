import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let other: { id: number; ownerEmail: string; rootToken: string };
beforeAll(async () => {
  s = await startTestServer();
  other = await s.team('Second Team');
});
afterAll(() => s.stop());

describe('teams', () => {
  it('GET /teams lists only the token’s own team', async () => {
    const a = await call(s.url, 'GET', '/api/v1/teams', { token: s.rootToken });
    expect(a.status).toBe(200);
    expect(a.json.map((t: { id: number }) => t.id)).toEqual([s.rootTeamId]);
    const b = await call(s.url, 'GET', '/api/v1/teams', { token: other.rootToken });
    expect(b.json.map((t: { id: number }) => t.id)).toEqual([other.id]);
  });

  it('a member token sees its team, bound at creation, whatever other teams the user has', async () => {
    const email = `multi-${Date.now()}@example.test`;
    const inRoot = await s.token({ permissions: ['read'], email });
    const inOther = await s.token({ permissions: ['read'], email, team: other.id });
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token: inRoot.token })).json.id).toBe(s.rootTeamId);
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token: inOther.token })).json.id).toBe(other.id);
  });

  it('members list has profile fields and roles, no secrets', async () => {
    const r = await call(s.url, 'GET', '/api/v1/teams/current/members', { token: s.rootToken });
    expect(r.status).toBe(200);
    const owner = r.json.find((m: { email: string }) => m.email === s.ownerEmail);
    expect(owner).toMatchObject({ role: 'owner' });
    for (const m of r.json) expect(Object.keys(m).sort()).toEqual(['created_at', 'email', 'id', 'name', 'role', 'updated_at']);
    expect(r.text).not.toMatch(/token|hash|password/i);
  });

  it('another team and a missing team get byte-identical 404s, for every team route', async () => {
    for (const suffix of ['', '/members']) {
      const own = await call(s.url, 'GET', `/api/v1/teams/${s.rootTeamId}${suffix}`, { token: s.rootToken });
      expect(own.status).toBe(200);
      const foreign = await call(s.url, 'GET', `/api/v1/teams/${other.id}${suffix}`, { token: s.rootToken });
      const missing = await call(s.url, 'GET', `/api/v1/teams/987654${suffix}`, { token: s.rootToken });
      expect(foreign.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(foreign.text).toBe('{"message":"Resource not found."}');
      expect(missing.text).toBe(foreign.text);
      expect(missing.headers['content-type']).toBe(foreign.headers['content-type']);
    }
  });

  it("Coolify 4.3's /team and /team/members answer like /teams/current and its members", async () => {
    for (const [alias, path] of [['/api/v1/team', '/api/v1/teams/current'], ['/api/v1/team/members', '/api/v1/teams/current/members']]) {
      const a = await call(s.url, 'GET', alias!, { token: s.rootToken });
      const b = await call(s.url, 'GET', path!, { token: s.rootToken });
      expect(a.status).toBe(200);
      expect(a.json).toEqual(b.json);
    }
  });

  it('a non-numeric team id is a validation error', async () => {
    const r = await call(s.url, 'GET', '/api/v1/teams/abc', { token: s.rootToken });
    expect(r.status).toBe(422);
    expect(r.json.message).toBe('Validation error.');
    expect(Object.keys(r.json.errors)).toEqual(['id']);
  });
});
