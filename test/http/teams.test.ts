import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { openStore, type Db } from '../../src/store/db.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';

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
    for (const [alias, path] of [
      ['/api/v1/team', '/api/v1/teams/current'],
      ['/api/v1/team/members', '/api/v1/teams/current/members'],
    ]) {
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

/**
 * Every team keeps an owner through every path that changes roles (add-member with another role,
 * remove-member). Refused with 409 "A team must keep at least one owner." (the CLI's conflict).
 */
describe('a team keeps at least one owner', () => {
  const roles = (db: Db, teamId: number) => db.selectFrom('team_members').select(['user_id', 'role']).where('team_id', '=', teamId).orderBy('user_id').execute();
  const owners = async (db: Db, teamId: number) => (await roles(db, teamId)).filter((m) => m.role === 'owner').length;
  const conflict = { kind: 'conflict', message: 'A team must keep at least one owner.' };

  it('making the last owner an admin or a member is refused, and changes nothing', async () => {
    const t = await s.team('Lone Owner');
    const before = await roles(s.db, t.id);
    for (const role of ['admin', 'member']) {
      await expect(admin.addMember(s.db, { team: String(t.id), email: t.ownerEmail, role })).rejects.toMatchObject(conflict);
    }
    await expect(admin.removeMember(s.db, { team: String(t.id), email: t.ownerEmail })).rejects.toMatchObject(conflict);
    expect(await roles(s.db, t.id)).toEqual(before);
    // The owner's root token still works as root.
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token: t.rootToken })).status).toBe(200);
  });

  it('with a second owner, one of them may step down; then the other is the last', async () => {
    const t = await s.team('Two Owners');
    const second = `second-${Date.now()}@example.test`;
    await admin.createUser(s.db, { email: second });
    await admin.addMember(s.db, { team: String(t.id), email: second, role: 'owner' });
    await expect(admin.addMember(s.db, { team: String(t.id), email: t.ownerEmail, role: 'member' })).resolves.toMatchObject({ role: 'member' });
    await expect(admin.addMember(s.db, { team: String(t.id), email: second, role: 'admin' })).rejects.toMatchObject(conflict);
    expect(await owners(s.db, t.id)).toBe(1);
  });

  it('two owners demoting each other at once leave exactly one owner', async () => {
    // On PostgreSQL a second handle (another pool) makes the changes really race. On SQLite a
    // second handle in this process would block the event loop while it waits for the lock the
    // first holds; one handle's transactions are serialized, as another process's are by BEGIN IMMEDIATE.
    const other = TEST_STORE === 'postgres' ? await openStore(s.dataDir, storeUrlFor(s.dataDir)) : s.db;
    try {
      for (let round = 0; round < 5; round++) {
        const t = await s.team(`Racing Owners ${round}`);
        const second = `racer-${round}-${Date.now()}@example.test`;
        await admin.createUser(s.db, { email: second });
        await admin.addMember(s.db, { team: String(t.id), email: second, role: 'owner' });
        const results = await Promise.allSettled([
          admin.addMember(s.db, { team: String(t.id), email: t.ownerEmail, role: 'member' }),
          admin.addMember(other, { team: String(t.id), email: second, role: 'member' }),
          admin.removeMember(s.db, { team: String(t.id), email: second }),
        ]);
        const refused = results.filter((r) => r.status === 'rejected');
        for (const r of refused) expect((r as PromiseRejectedResult).reason).toMatchObject(conflict);
        expect(refused.length, `round ${round}`).toBeGreaterThanOrEqual(1);
        expect(await owners(s.db, t.id), `round ${round}`).toBe(1);
      }
    } finally {
      if (other !== s.db) await other.destroy();
    }
  });
});
