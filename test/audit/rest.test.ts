import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { freshKey, S3_SAMPLE } from '../helpers/world.js';
import { browse, signInByLink } from '../helpers/console.js';

/**
 * The audit log over REST (issue 26): one entry per changing call, whatever its outcome, with
 * secrets planted in the arguments never stored; nothing for reads; another team sees nothing.
 * Runs on the store BERTH_TEST_STORE names.
 */

let s: TestServer;
let writer: { id: number; token: string };
let reader: { id: number; token: string };
let other: { id: number; rootToken: string; ownerEmail: string };

const SECRET = 'planted-secret-5f1c0a9e';

async function entries(token: string, query = ''): Promise<{ status: number; total: number; items: any[] }> {
  const r = await call(s.url, 'GET', `/api/v1/audit${query}`, { token });
  return { status: r.status, total: Number(r.headers['x-total-count']), items: r.json };
}

/** Every stored row as text: a planted secret must appear nowhere in it. */
async function storedText(): Promise<string> {
  return JSON.stringify(await s.db.selectFrom('audit_log').selectAll().execute());
}

beforeAll(async () => {
  s = await startTestServer();
  writer = await s.token({ permissions: ['read', 'write'], email: 'writer@example.test' });
  reader = await s.token({ permissions: ['read'], email: 'reader@example.test' });
  other = await s.team('Other');
});
afterAll(() => s.stop());

describe('audit log over REST', () => {
  it('writes one entry per change, with the secrets redacted and the target named', async () => {
    const key = freshKey();
    const created = await call(s.url, 'POST', '/api/v1/security/keys', { token: writer.token, body: { name: 'deploy key', private_key: key } });
    expect(created.status).toBe(201);
    const env = await call(s.url, 'POST', '/api/v1/team/envs', { token: writer.token, body: { key: 'API_SECRET', value: SECRET } });
    expect(env.status).toBe(201);

    const { status, total, items } = await entries(reader.token);
    expect(status).toBe(200);
    expect(total).toBe(2);
    const [e2, e1] = items;
    expect(e1).toMatchObject({
      operation: 'create_private_key',
      door: 'rest',
      result: 'ok',
      status: 201,
      user_email: 'writer@example.test',
      token_id: writer.id,
      oauth_client_id: null,
      source_ip: '127.0.0.1',
      targets: [created.json.uuid],
      // A read token sees no secret field at all, as in every response; read:sensitive sees it masked.
      arguments: { name: 'deploy key' },
      started_uuid: null,
    });
    expect(Object.keys(e1.arguments)).toEqual(['name']);
    expect((await entries(s.rootToken)).items[1].arguments).toEqual({ name: 'deploy key', private_key: '[redacted]' });
    expect(e1.duration_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(e1.at)).toBeGreaterThan(Date.now() - 60_000);
    expect(e2).toMatchObject({ operation: 'create_team_shared_env', result: 'ok', arguments: { key: 'API_SECRET' } });
    expect((await entries(s.rootToken)).items[0].arguments).toEqual({ key: 'API_SECRET', value: '[redacted]' });
    const text = await storedText();
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(key.split('\n')[1]!);
  });

  it('hides what the resource hides from a read token, even when the change answers only a uuid (an S3 key)', async () => {
    const made = await call(s.url, 'POST', '/api/v1/s3-storages', { token: writer.token, body: { ...S3_SAMPLE, key: 'AKIDPLANTED0001' } });
    expect(made.status).toBe(201);
    const changed = await call(s.url, 'PATCH', `/api/v1/s3-storages/${made.json.uuid}`, { token: writer.token, body: { key: 'AKIDPLANTED0002' } });
    expect(changed.status).toBe(200);
    // The resource itself shows a read token no key.
    expect((await call(s.url, 'GET', `/api/v1/s3-storages/${made.json.uuid}`, { token: reader.token })).json.key).toBeUndefined();
    const [update, create] = (await entries(reader.token, '?per_page=2')).items;
    expect(create).toMatchObject({ operation: 'create_s3_storage', arguments: { bucket: S3_SAMPLE.bucket } });
    expect(update).toMatchObject({ operation: 'update_s3_storage', arguments: { uuid: made.json.uuid } });
    expect(create.arguments).not.toHaveProperty('key');
    expect(update.arguments).not.toHaveProperty('key');
    const [u2, c2] = (await entries(s.rootToken, '?per_page=2')).items;
    expect(c2.arguments).toMatchObject({ key: '[redacted]', secret: '[redacted]' });
    expect(u2.arguments).toEqual({ uuid: made.json.uuid, key: '[redacted]' });
    expect(await storedText()).not.toMatch(/AKIDPLANTED/);
  });

  it('reads write nothing; failures after validation, validation failures and refusals are entries too', async () => {
    const before = (await entries(reader.token)).total;
    expect((await call(s.url, 'GET', '/api/v1/projects', { token: writer.token })).status).toBe(200);
    expect((await entries(reader.token)).total).toBe(before);

    expect((await call(s.url, 'DELETE', '/api/v1/projects/doesnotexist0', { token: writer.token })).status).toBe(404);
    expect((await call(s.url, 'POST', '/api/v1/projects', { token: writer.token, body: { name: '', password: SECRET } })).status).toBe(422);
    expect((await call(s.url, 'POST', '/api/v1/projects', { token: reader.token, body: { name: 'nope', password: SECRET } })).status).toBe(403);

    const { items } = await entries(reader.token, `?per_page=3`);
    expect(items.map((e) => [e.operation, e.result, e.status])).toEqual([
      ['create_project', 'forbidden', 403],
      ['create_project', 'validation', 422],
      ['delete_project', 'not_found', 404],
    ]);
    expect(items[0].arguments).toBeNull();
    expect(items[0].user_email).toBe('reader@example.test');
    expect(items[1].arguments).toEqual({ name: '' });
    expect((await entries(s.rootToken, `?per_page=3`)).items[1].arguments).toEqual({ name: '', password: '[redacted]' });
    expect(items[2].targets).toEqual(['doesnotexist0']);
    expect(await storedText()).not.toContain(SECRET);
  });

  it('filters by operation, result, resource, user, token and time, and pages', async () => {
    const p = await call(s.url, 'POST', '/api/v1/projects', { token: writer.token, body: { name: 'audited' } });
    expect(p.status).toBe(201);
    const uuid = p.json.uuid as string;
    expect((await call(s.url, 'PATCH', `/api/v1/projects/${uuid}`, { token: writer.token, body: { description: 'changed' } })).status).toBe(201);

    const byResource = await entries(reader.token, `?resource=${uuid}`);
    expect(byResource.items.map((e) => e.operation)).toEqual(['update_project', 'create_project']);
    expect((await entries(reader.token, '?operation=update_project')).items.every((e) => e.operation === 'update_project')).toBe(true);
    const errors = await entries(reader.token, '?result=error');
    expect(errors.total).toBe(3);
    expect(errors.items.every((e) => e.result !== 'ok')).toBe(true);
    expect((await entries(reader.token, '?result=forbidden')).total).toBe(1);
    expect((await entries(reader.token, '?user=reader@example.test')).total).toBe(1);
    expect((await entries(reader.token, `?token=${writer.id}`)).total).toBe((await entries(reader.token)).total - 1);
    expect((await entries(reader.token, '?to=2000-01-01T00:00:00Z')).total).toBe(0);
    expect((await entries(reader.token, `?from=${new Date(Date.now() - 600_000).toISOString()}`)).total).toBe((await entries(reader.token)).total);

    const page2 = await call(s.url, 'GET', '/api/v1/audit?per_page=2&page=2', { token: reader.token });
    expect(page2.headers['x-page']).toBe('2');
    expect(page2.json).toHaveLength(2);

    const bad = await call(s.url, 'GET', '/api/v1/audit?from=yesterday&resource=a%25b', { token: reader.token });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.json.errors).sort()).toEqual(['from', 'resource']);
  });

  it("never shows another team's entries", async () => {
    const mine = await entries(reader.token);
    expect(mine.total).toBeGreaterThan(0);
    const theirs = await entries(other.rootToken);
    expect(theirs).toMatchObject({ status: 200, total: 0, items: [] });
    const target = mine.items[0].targets[0] as string;
    expect((await entries(other.rootToken, `?resource=${target}`)).total).toBe(0);
    // Their own change is theirs alone.
    expect((await call(s.url, 'POST', '/api/v1/projects', { token: other.rootToken, body: { name: 'theirs' } })).status).toBe(201);
    expect((await entries(other.rootToken)).total).toBe(1);
    expect((await entries(reader.token)).total).toBe(mine.total);
  });

  it('keeps the retention as an instance setting (default 90 days)', async () => {
    expect((await call(s.url, 'GET', '/api/v1/settings', { token: s.rootToken })).json.audit_retention_days).toBe(90);
    const r = await call(s.url, 'PATCH', '/api/v1/settings', { token: s.rootToken, body: { audit_retention_days: 30 } });
    expect(r.json.audit_retention_days).toBe(30);
    expect((await call(s.url, 'PATCH', '/api/v1/settings', { token: s.rootToken, body: { audit_retention_days: 0 } })).status).toBe(422);
  });

  it("shows the console's audit page to the team's members only, secrets redacted", async () => {
    const mine = await signInByLink(s.url, s.db, 'writer@example.test');
    const page = await browse(s.url, mine.jar, 'GET', '/audit?operation=create_team_shared_env');
    expect(page.status).toBe(200);
    expect(page.text).toContain('create_team_shared_env');
    expect(page.text).toContain('[redacted]');
    expect(page.text).not.toContain(SECRET);
    // Another team's owner picking this team sees their own team instead, and none of its entries.
    const theirs = await signInByLink(s.url, s.db, other.ownerEmail);
    const foreign = await browse(s.url, theirs.jar, 'GET', `/audit?team=${s.rootTeamId}`);
    expect(foreign.status).toBe(200);
    expect(foreign.text).not.toContain('create_team_shared_env');
    expect(foreign.text).toContain('for Other');
  });
});
