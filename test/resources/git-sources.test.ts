/**
 * Records Coolify clients read (GitHub apps, cloud provider tokens) and the door of private
 * repositories by deploy key: stored per team, secrets redacted without read:sensitive, another
 * team's record the same 404 as a missing one, what needs a provider's network a 502 that says
 * why (github-app-api.test.ts has GitHub's side), and SSH repository addresses that could read as an
 * option or reach a forbidden host refused at the door.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_FOUND, placeOf, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const newKey = async (name: string, token = c.root) => {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const r = await c.api('POST', '/security/keys', token, { name, private_key: pem });
  expect(r.status, r.text).toBe(201);
  return r.json.uuid as string;
};

const app = (key: string, extra: Record<string, unknown> = {}) => ({
  name: 'gh',
  html_url: 'https://github.com',
  api_url: 'https://api.github.com',
  app_id: 1234,
  installation_id: 5678,
  client_id: 'Iv1.abc',
  client_secret: 'client-secret-value',
  webhook_secret: 'webhook-secret-value',
  private_key_uuid: key,
  ...extra,
});

describe('GitHub apps', () => {
  it('create, list, update, delete; secrets only with read:sensitive; the key must be the team’s and stays while an app holds it', async () => {
    const key = await newKey('gh-app-key');
    const r = await c.api('POST', '/github-apps', c.readWrite, app(key));
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({
      id: expect.any(Number),
      uuid: expect.any(String),
      name: 'gh',
      custom_user: 'git',
      custom_port: 22,
      app_id: 1234,
      installation_id: 5678,
      client_id: 'Iv1.abc',
      is_system_wide: false,
    });
    expect(r.json).not.toHaveProperty('client_secret');
    expect(r.json).not.toHaveProperty('webhook_secret');
    const id = r.json.id as number;
    const listed = (await c.api('GET', '/github-apps', c.read)).json;
    expect(listed.map((a: { id: number }) => a.id)).toContain(id);
    expect(JSON.stringify(listed)).not.toContain('secret-value');
    const secret = (await c.api('GET', '/github-apps', c.sensitive)).json.find((a: { id: number }) => a.id === id);
    expect(secret).toMatchObject({ client_secret: 'client-secret-value', webhook_secret: 'webhook-secret-value' });

    const p = await c.api('PATCH', `/github-apps/${id}`, c.readWrite, { name: 'renamed', custom_port: 2222 });
    expect(p.status, p.text).toBe(200);
    expect(p.json).toMatchObject({ message: 'GitHub app updated successfully', data: { name: 'renamed', custom_port: 2222 } });
    expect(p.json.data).not.toHaveProperty('client_secret');

    // The key is held: deleting it is a 409 and nothing changes.
    const del = await c.api('DELETE', `/security/keys/${key}`, c.write);
    expect(del.status).toBe(409);
    expect((await c.api('DELETE', `/github-apps/${id}`, c.write)).json).toEqual({ message: 'GitHub app deleted successfully' });
    expect((await c.api('PATCH', `/github-apps/${id}`, c.write, { name: 'x' })).text).toBe(NOT_FOUND);
    expect((await c.api('DELETE', `/security/keys/${key}`, c.write)).status).toBe(200);
  });

  it('refuses other teams’ keys (404), system-wide apps, bad URLs and unknown fields, storing nothing', async () => {
    const key = await newKey('gh-app-key-2');
    const before = (await c.api('GET', '/github-apps', c.read)).json.length;
    const other = await c.s.team('gh-neighbour');
    const foreignKey = await newKey('theirs', other.rootToken);
    // Another team's key is the same 404 as a missing one.
    expect((await c.api('POST', '/github-apps', c.write, app(foreignKey))).text).toBe(NOT_FOUND);
    for (const [body, field] of [
      [app(key, { is_system_wide: true }), 'is_system_wide'],
      [app(key, { html_url: 'http://a.test\\@127.0.0.1/' }), 'html_url'],
      [app(key, { api_url: 'ftp://x.test' }), 'api_url'],
      [app(key, { custom_port: 0 }), 'custom_port'],
      [app(key, { owner: 'x' }), 'owner'],
    ] as const) {
      const r = await c.api('POST', '/github-apps', c.write, body);
      expect(r.status, `${field}: ${r.text}`).toBe(422);
      expect(Object.keys(r.json.errors)).toContain(field);
    }
    expect((await c.api('GET', '/github-apps', c.read)).json.length).toBe(before);
  });

  it("repositories, branches and private-github-app with a key that cannot sign for GitHub: 502 saying so, before any call; another team's app is the same 404", async () => {
    const key = await newKey('gh-app-key-3');
    const { id, uuid } = (await c.api('POST', '/github-apps', c.write, app(key, { name: 'net' }))).json;
    for (const path of [`/github-apps/${id}/repositories`, `/github-apps/${id}/repositories/octo/hello/branches`]) {
      const r = await c.api('GET', path, c.read);
      expect(r.status, path).toBe(502);
      expect(r.json.message).toMatch(/not an RSA key/);
    }
    const create = await c.api('POST', '/applications/private-github-app', c.write, {
      ...placeOf(c.w),
      github_app_uuid: uuid,
      git_repository: 'octo/hello',
      git_branch: 'main',
      build_pack: 'dockerfile',
      ports_exposes: '80',
    });
    expect(create.status, create.text).toBe(502);
    expect(create.json.message).toMatch(/not an RSA key/);
    const other = await c.s.team('gh-neighbour-2');
    for (const [m, p, body] of [
      ['GET', `/github-apps/${id}/repositories`],
      ['PATCH', `/github-apps/${id}`, { name: 'mine' }],
      ['DELETE', `/github-apps/${id}`],
    ] as const) {
      const r = await c.api(m, p, other.rootToken, body);
      expect(r.status, p).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    expect((await c.api('GET', '/github-apps', other.rootToken)).json).toEqual([]);
    expect((await c.api('GET', '/github-apps/999999/repositories', c.read)).text).toBe(NOT_FOUND);
    expect((await c.api('POST', '/github-apps', c.read, app(key))).status).toBe(403);
  });
});

describe('cloud tokens', () => {
  it('create, list, get, rename, delete; the value never in lists, in one token only with read:sensitive; validate asks the provider (unreachable here: 502)', async () => {
    const r = await c.api('POST', '/cloud-tokens', c.write, { provider: 'hetzner', token: 'hz-secret-token', name: 'My Hetzner' });
    expect(r.status, r.text).toBe(201);
    const { uuid } = r.json;
    const list = (await c.api('GET', '/cloud-tokens', c.sensitive)).json;
    expect(list).toContainEqual(expect.objectContaining({ uuid, name: 'My Hetzner', provider: 'hetzner', servers_count: 0 }));
    expect(JSON.stringify(list)).not.toContain('hz-secret-token');
    expect((await c.api('GET', `/cloud-tokens/${uuid}`, c.read)).json).not.toHaveProperty('token');
    expect((await c.api('GET', `/cloud-tokens/${uuid}`, c.sensitive)).json.token).toBe('hz-secret-token');
    expect((await c.api('PATCH', `/cloud-tokens/${uuid}`, c.write, { name: 'Renamed' })).json).toEqual({ uuid });
    expect((await c.api('PATCH', `/cloud-tokens/${uuid}`, c.write, { token: 'new' })).status).toBe(422);
    const v = await c.api('POST', `/cloud-tokens/${uuid}/validate`, c.read);
    expect(v.status).toBe(502);
    expect(v.json.message).toMatch(/^Hetzner's API \(https:\/\/hetzner\.invalid\) could not be reached/);
    const other = await c.s.team('cloud-neighbour');
    for (const [m, p] of [
      ['GET', `/cloud-tokens/${uuid}`],
      ['POST', `/cloud-tokens/${uuid}/validate`],
      ['DELETE', `/cloud-tokens/${uuid}`],
    ] as const) {
      expect((await c.api(m, p, other.rootToken)).text).toBe(NOT_FOUND);
    }
    expect((await c.api('POST', '/cloud-tokens', c.write, { provider: 'aws', token: 't', name: 'n' })).status).toBe(422);
    expect((await c.api('DELETE', `/cloud-tokens/${uuid}`, c.write)).json).toEqual({ message: 'Cloud provider token deleted.' });
    expect((await c.api('GET', `/cloud-tokens/${uuid}`, c.sensitive)).text).toBe(NOT_FOUND);
  });
});

describe('private repositories by deploy key: the door', () => {
  const body = (extra: Record<string, unknown>) => ({ ...placeOf(c.w), git_branch: 'main', build_pack: 'dockerfile', ports_exposes: '80', ...extra });

  it('stores the repository and key; refuses addresses that could read as options or reach forbidden hosts, and other teams’ keys', async () => {
    const key = await newKey('deploy-key');
    const ok = await c.api('POST', '/applications/private-deploy-key', c.readWrite, body({ private_key_uuid: key, git_repository: 'git@github.com:octo/private.git' }));
    expect(ok.status, ok.text).toBe(201);
    const got = (await c.api('GET', `/applications/${ok.json.uuid}`, c.read)).json;
    expect(got).toMatchObject({ build_pack: 'dockerfile', git_repository: 'git@github.com:octo/private.git', git_branch: 'main', docker_images_to_keep: 2 });
    // The key is held by the application now.
    expect((await c.api('DELETE', `/security/keys/${key}`, c.write)).status).toBe(409);

    const before = (await c.api('GET', '/applications', c.read)).json.length;
    const other = await c.s.team('deploy-key-neighbour');
    const foreignKey = await newKey('theirs', other.rootToken);
    const refused: [Record<string, unknown>, string, RegExp][] = [
      [{ private_key_uuid: key, git_repository: '-oProxyCommand=touch /tmp/x:repo' }, 'git_repository', /plain ASCII|SSH repository/],
      [{ private_key_uuid: key, git_repository: 'git@-oProxyCommand=sh:repo' }, 'git_repository', /host/],
      [{ private_key_uuid: key, git_repository: '-oProxyCommand=sh@github.com:repo' }, 'git_repository', /user/],
      [{ private_key_uuid: key, git_repository: 'git@github.com:--upload-pack.git' }, 'git_repository', /start with "-"/],
      [{ private_key_uuid: key, git_repository: 'ssh://git@github.com/../etc/passwd' }, 'git_repository', /\.\./],
      [{ private_key_uuid: key, git_repository: 'ssh://git@169.254.169.254/x.git' }, 'git_repository', /metadata|link-local/],
      [{ private_key_uuid: key, git_repository: 'git@127.0.0.1:x.git' }, 'git_repository', /loopback|berth host/],
      [{ private_key_uuid: key, git_repository: 'git@127.1:x.git' }, 'git_repository', /four decimal/],
      [{ private_key_uuid: key, git_repository: 'https://github.com/octo/x.git' }, 'git_repository', /SSH repository/],
      [{ private_key_uuid: key, git_repository: 'git@github.com:x.git', git_host_key: 'not a key' }, 'git_host_key', /host key/],
      [{ private_key_uuid: key, git_repository: 'git@github.com:x.git', git_branch: '--upload-pack=x' }, 'git_branch', /branch/],
      [{ private_key_uuid: key, git_repository: 'git@github.com:x.git', build_pack: 'heroku' }, 'build_pack', /not a build pack berth knows/],
    ];
    expect((await c.api('POST', '/applications/private-deploy-key', c.write, body({ private_key_uuid: foreignKey, git_repository: 'git@github.com:x.git' }))).text).toBe(NOT_FOUND);
    for (const [extra, field, message] of refused) {
      const r = await c.api('POST', '/applications/private-deploy-key', c.write, body(extra));
      expect(r.status, `${JSON.stringify(extra)}: ${r.text}`).toBe(422);
      expect(r.json.errors[field]?.join(' '), `${JSON.stringify(extra)}: ${r.text}`).toMatch(message);
    }
    expect((await c.api('GET', '/applications', c.read)).json.length).toBe(before);
  });

  it('rollback: a tag the engine does not keep is a 422; a record-only server lists no images', async () => {
    const imgs = await c.api('GET', `/applications/${c.w.appUuid}/rollback-images`, c.read);
    expect(imgs.status, imgs.text).toBe(200);
    expect(imgs.json).toEqual({ current: null, images: [] });
    const r = await c.api('POST', `/applications/${c.w.appUuid}/rollback`, c.deploy, { commit: 'abc' });
    expect(r.status).toBe(422);
    expect((await c.api('POST', `/applications/${c.w.appUuid}/rollback`, c.deploy, { commit: '-x;y' })).status).toBe(422);
    expect((await c.api('POST', `/applications/${c.w.appUuid}/rollback`, c.read, { commit: 'abc' })).status).toBe(403);
    expect((await c.api('PATCH', `/applications/${c.w.appUuid}`, c.write, { docker_images_to_keep: 101 })).status).toBe(422);
  });
});
