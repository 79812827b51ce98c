/**
 * GitLab app records (Coolify's /gitlab-apps, by integer id): created with Coolify's defaults,
 * listed per team, secrets shown only with read:sensitive, changed and deleted; another team's
 * record is a 404 like a missing one; system-wide records are refused by name. And Coolify's
 * documented PATCH /security/keys (the key's uuid in the body) updates a key like
 * PATCH /security/keys/{uuid}.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

let s: TestServer;
let read: string;
const api = (method: string, p: string, token: string, body?: unknown) => call(s.url, method, `/api/v1${p}`, { token, ...(body === undefined ? {} : { body }) });

beforeAll(async () => {
  s = await startTestServer();
  read = (await s.token({ permissions: ['read'] })).token;
});
afterAll(() => s.stop());

describe('GitLab apps', () => {
  it('records an app with Coolify’s defaults and keeps its secrets from read-only tokens', async () => {
    const r = await api('POST', '/gitlab-apps', s.rootToken, { name: 'gl', html_url: 'https://gitlab.example.com/', client_id: 'app-id', client_secret: 'app-secret' });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({
      name: 'gl',
      html_url: 'https://gitlab.example.com',
      api_url: 'https://gitlab.example.com/api/v4',
      custom_user: 'git',
      custom_port: 22,
      client_id: 'app-id',
      client_secret: 'app-secret',
      is_system_wide: false,
    });
    expect(r.json.webhook_token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(typeof r.json.id).toBe('number');

    const listed = await api('GET', '/gitlab-apps', read);
    expect(listed.status).toBe(200);
    expect(listed.json).toHaveLength(1);
    expect(listed.json[0]).toMatchObject({ id: r.json.id, name: 'gl' });
    expect(listed.json[0]).not.toHaveProperty('client_secret');
    expect(listed.json[0]).not.toHaveProperty('webhook_token');

    const other = await s.team('GitLab other');
    expect((await api('GET', '/gitlab-apps', other.rootToken)).json).toEqual([]);
    const theirs = await api('PATCH', `/gitlab-apps/${r.json.id}`, other.rootToken, { name: 'stolen' });
    const missing = await api('PATCH', '/gitlab-apps/999999', s.rootToken, { name: 'x' });
    expect(theirs.status).toBe(404);
    expect(theirs.text).toBe(missing.text);
    expect((await api('DELETE', `/gitlab-apps/${r.json.id}`, other.rootToken)).status).toBe(404);
    expect((await api('PATCH', `/gitlab-apps/${r.json.id}`, read, { name: 'x' })).status).toBe(403);
  });

  it('moves api_url with html_url, keeps secrets unless given, deletes', async () => {
    const { json: app } = await api('POST', '/gitlab-apps', s.rootToken, { name: 'moving', html_url: 'https://git.one.test', webhook_token: 'given-token', custom_port: 2222 });
    const u = await api('PATCH', `/gitlab-apps/${app.id}`, s.rootToken, { html_url: 'https://git.two.test', group_name: 'platform' });
    expect(u.status, u.text).toBe(200);
    expect(u.json).toMatchObject({
      message: 'GitLab app updated successfully',
      data: { name: 'moving', html_url: 'https://git.two.test', api_url: 'https://git.two.test/api/v4', webhook_token: 'given-token', custom_port: 2222, group_name: 'platform' },
    });
    const own = await api('PATCH', `/gitlab-apps/${app.id}`, s.rootToken, { api_url: 'https://api.git.two.test/v4/' });
    expect(own.json.data.api_url).toBe('https://api.git.two.test/v4');
    const d = await api('DELETE', `/gitlab-apps/${app.id}`, s.rootToken);
    expect(d.status).toBe(200);
    expect((await api('GET', '/gitlab-apps', s.rootToken)).json.map((a: { id: number }) => a.id)).not.toContain(app.id);
    expect((await api('DELETE', `/gitlab-apps/${app.id}`, s.rootToken)).status).toBe(404);
  });

  it('refuses bad input by field, system-wide records by name, and changes nothing', async () => {
    const before = (await api('GET', '/gitlab-apps', s.rootToken)).json;
    const bad = await api('POST', '/gitlab-apps', s.rootToken, { name: '', html_url: 'ftp://x', custom_port: 70000, extra: 1 });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.json.errors).sort()).toEqual(['custom_port', 'extra', 'html_url', 'name']);
    const wide = await api('POST', '/gitlab-apps', s.rootToken, { name: 'wide', html_url: 'https://gitlab.com', is_system_wide: true });
    expect(wide.status).toBe(422);
    expect(wide.json.errors.is_system_wide[0]).toMatch(/berth does not support/);
    expect((await api('PATCH', '/gitlab-apps/abc', s.rootToken, { name: 'x' })).status).toBe(422);
    expect((await api('GET', '/gitlab-apps', s.rootToken)).json).toEqual(before);
  });
});

describe('PATCH /security/keys (as Coolify documents it)', () => {
  it('names the key by uuid in the body', async () => {
    const dir = tempDir('berth-key-');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'k')]);
    const pem = fs.readFileSync(path.join(dir, 'k'), 'utf8');
    fs.rmSync(dir, { recursive: true, force: true });
    const key = await api('POST', '/security/keys', s.rootToken, { name: 'k', private_key: pem });
    expect(key.status, key.text).toBe(201);
    const u = await api('PATCH', '/security/keys', s.rootToken, { uuid: key.json.uuid, name: 'renamed' });
    expect(u.status, u.text).toBe(201);
    expect((await api('GET', `/security/keys/${key.json.uuid}`, s.rootToken)).json.name).toBe('renamed');
    expect((await api('PATCH', '/security/keys', s.rootToken, { name: 'no uuid' })).status).toBe(422);
    const other = await s.team('Keys other');
    expect((await api('PATCH', '/security/keys', other.rootToken, { uuid: key.json.uuid, name: 'theirs' })).status).toBe(404);
  });
});
