/**
 * A GitHub app's network side, against a stand-in that speaks GitHub's protocol (test/helpers/
 * github.ts): berth signs the app's JWT with the team's key, buys an installation token, lists
 * the installation's repositories (every page) and a repository's branches, checks a repository
 * before creating an application through the app, and clones over smart HTTP with the token as
 * x-access-token. A key GitHub does not know is refused by GitHub (502 here); the token never
 * appears in an answer or a clone's log; an app in use is not deleted; another team's is a 404.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TargetGuard } from '../../src/core/outbound-guard.js';
import { prepareBuildContext } from '../../src/engine/build-source.js';
import { fakeGithub, type FakeGithub } from '../helpers/github.js';
import { NOT_FOUND, placeOf, setup, type Ctx } from './support.js';

const APP_ID = 424242;
const INSTALLATION = 777;
const REPO = 'acme/private-app';
/** 150 repositories (two pages of GitHub's 100), one of them with content. */
const REPOSITORIES = [REPO, ...Array.from({ length: 149 }, (_, i) => `acme/r-${String(i).padStart(3, '0')}`)];

let c: Ctx;
let gh: FakeGithub;
let root: string;
let commit: string;
let keyUuid: string;
let appId: number;
let appUuid: string;
/** Every answer berth gave in this file: no installation token may be in any. */
const answers: string[] = [];

const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = (k: KeyObject) => k.export({ type: 'pkcs1', format: 'pem' }).toString();
const api = async (method: string, p: string, token: string, body?: unknown) => {
  const r = await c.api(method, p, token, body);
  answers.push(r.text);
  return r;
};
const appBody = (key: string, extra: Record<string, unknown> = {}) => ({
  name: 'Acme GHE',
  api_url: gh.apiUrl,
  html_url: gh.htmlUrl,
  app_id: APP_ID,
  installation_id: INSTALLATION,
  client_id: 'Iv1.acme',
  client_secret: 'acme-client-secret',
  webhook_secret: 'acme-webhook-secret',
  private_key_uuid: key,
  ...extra,
});

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'berth-gh-'));
  const bare = path.join(root, 'repos', `${REPO}.git`);
  const work = path.join(root, 'work');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd: work, encoding: 'utf8' });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  execFileSync('git', ['init', '-q', '-b', 'main', work]);
  writeFileSync(path.join(work, 'Dockerfile'), 'FROM scratch\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'first');
  git('push', '-q', bare, 'main', 'main:dev');
  commit = git('rev-parse', 'HEAD').trim();

  const { privateKey, publicKey } = rsa();
  gh = await fakeGithub({ appId: APP_ID, installationId: INSTALLATION, publicKey, root: path.join(root, 'repos'), repositories: REPOSITORIES });
  c = await setup({ outboundAllowedTargets: '127.0.0.1' });
  keyUuid = (await api('POST', '/security/keys', c.root, { name: 'gh app key', private_key: pem(privateKey) })).json.uuid;
  const created = await api('POST', '/github-apps', c.write, appBody(keyUuid));
  expect(created.status, created.text).toBe(201);
  ({ id: appId, uuid: appUuid } = created.json);
}, 60_000);
afterAll(async () => {
  await c?.stop();
  await gh?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('GitHub app through its installation token', () => {
  it("lists the installation's repositories (every page, by name) and a repository's branches", async () => {
    const r = await api('GET', `/github-apps/${appId}/repositories`, c.read);
    expect(r.status, r.text).toBe(200);
    const names = r.json.repositories.map((x: { name: string }) => x.name);
    expect(names).toHaveLength(150);
    expect(names).toEqual([...names].sort((a: string, b: string) => a.localeCompare(b)));
    expect(r.json.repositories).toContainEqual(expect.objectContaining({ full_name: REPO, private: true }));
    // Two pages of 100, each with a token minted from a JWT the stand-in verified.
    expect(gh.requests.filter((q) => q.path === '/installation/repositories' && q.authorized)).toHaveLength(2);
    expect(gh.refused).toEqual([]);

    const b = await api('GET', `/github-apps/${appId}/repositories/acme/private-app/branches`, c.read);
    expect(b.status, b.text).toBe(200);
    expect(b.json.branches.map((x: { name: string }) => x.name).sort()).toEqual(['dev', 'main']);
    expect(b.json.branches[0].commit.sha).toBe(commit);
    const missing = await api('GET', `/github-apps/${appId}/repositories/acme/nope/branches`, c.read);
    expect(missing.status).toBe(404);
    expect(missing.json.message).toMatch(/acme\/nope not found or not accessible/);
  });

  it('a key GitHub does not know: GitHub refuses the JWT, berth answers 502 naming the app; a non-RSA key is refused before any call', async () => {
    const stranger = (await api('POST', '/security/keys', c.root, { name: 'not the app key', private_key: pem(rsa().privateKey) })).json.uuid;
    const { id } = (await api('POST', '/github-apps', c.write, appBody(stranger, { name: 'Wrong key' }))).json;
    const r = await api('GET', `/github-apps/${id}/repositories`, c.read);
    expect(r.status, r.text).toBe(502);
    expect(r.json.message).toMatch(/^GitHub answered 401 to an installation token for app Wrong key: A JSON web token could not be decoded/);
    expect(gh.refused).toContain('bad signature');

    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const edKey = (await api('POST', '/security/keys', c.root, { name: 'ed key', private_key: ed })).json.uuid;
    const edApp = (await api('POST', '/github-apps', c.write, appBody(edKey, { name: 'Ed key' }))).json.id;
    const calls = gh.requests.length;
    const e = await api('GET', `/github-apps/${edApp}/repositories`, c.read);
    expect(e.status).toBe(502);
    expect(e.json.message).toMatch(/not an RSA key/);
    expect(gh.requests.length).toBe(calls);
  });

  it('creates an application through the app (repository checked, stored as owner/repo); refuses an unreachable repository, a bad name, and deleting the app while used', async () => {
    const body = { ...placeOf(c.w), github_app_uuid: appUuid, git_branch: 'main', build_pack: 'dockerfile', ports_exposes: '80' };
    const r = await api('POST', '/applications/private-github-app', c.write, { ...body, git_repository: `https://github.com/${REPO}.git` });
    expect(r.status, r.text).toBe(201);
    expect(gh.requests).toContainEqual({ method: 'GET', path: `/repos/${REPO}`, authorized: true });
    const app = (await api('GET', `/applications/${r.json.uuid}`, c.read)).json;
    expect(app).toMatchObject({ build_pack: 'dockerfile', git_repository: REPO, git_branch: 'main', base_directory: '/' });

    const nope = await api('POST', '/applications/private-github-app', c.write, { ...body, git_repository: 'acme/nope' });
    expect(nope.status).toBe(404);
    expect(nope.json.message).toBe('Repository not found or not accessible by the GitHub App.');
    const bad = await api('POST', '/applications/private-github-app', c.write, { ...body, git_repository: 'not a repository' });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.json.errors)).toEqual(['git_repository']);

    // PATCH keeps the owner/repo form; a URL of another kind is refused by name.
    const p = await api('PATCH', `/applications/${r.json.uuid}`, c.write, { git_repository: 'https://github.com/acme/r-001' });
    expect(p.status, p.text).toBeLessThan(300);
    expect((await api('GET', `/applications/${r.json.uuid}`, c.read)).json.git_repository).toBe('acme/r-001');
    expect((await api('PATCH', `/applications/${r.json.uuid}`, c.write, { git_repository: 'git@github.com:acme/x.git' })).status).toBe(422);

    const del = await api('DELETE', `/github-apps/${appId}`, c.write);
    expect(del.status).toBe(409);
    expect(del.json.message).toMatch(/used by 1 application/);
  });

  it('a compose application through the app keeps its compose location and per-service domains, as through the other creates', async () => {
    const r = await api('POST', '/applications/private-github-app', c.write, {
      ...placeOf(c.w),
      github_app_uuid: appUuid,
      git_repository: REPO,
      git_branch: 'main',
      ports_exposes: '80',
      build_pack: 'dockercompose',
      docker_compose_location: '/deploy/compose.yml',
      docker_compose_domains: [{ name: 'web', domain: 'https://web.gh-compose.example.test' }],
    });
    expect(r.status, r.text).toBe(201);
    expect((await api('GET', `/applications/${r.json.uuid}`, c.read)).json).toMatchObject({
      build_pack: 'dockercompose',
      docker_compose_location: '/deploy/compose.yml',
      docker_compose_domains: JSON.stringify({ web: { domain: 'https://web.gh-compose.example.test' } }),
    });
    expect((await api('DELETE', `/applications/${r.json.uuid}`, c.write)).status).toBeLessThan(300);
  });

  it("another team's app is the same 404 everywhere, before GitHub is asked", async () => {
    const other = await c.s.team('gh-api-neighbour');
    const calls = gh.requests.length;
    for (const [m, p] of [
      ['GET', `/github-apps/${appId}/repositories`],
      ['GET', `/github-apps/${appId}/repositories/acme/private-app/branches`],
    ] as const) {
      const r = await api(m, p, other.rootToken);
      expect(r.text, p).toBe(NOT_FOUND);
    }
    expect(gh.requests.length).toBe(calls);
  });

  it('clones with the token as x-access-token (never in the log); a refused token fails with git’s words and no token', async () => {
    const guard = new TargetGuard('127.0.0.1');
    const tokenOf = async () => {
      await api('GET', `/github-apps/${appId}/repositories/acme/private-app/branches`, c.read);
      return gh.tokens.at(-1)!;
    };
    const src = { git_repository: REPO, git_branch: 'dev', base_directory: '/', dockerfile_location: '/Dockerfile', github_app_id: appId };
    const log: string[] = [];
    const token = await tokenOf();
    const ctx = await prepareBuildContext(src, guard, async (l) => void log.push(l), { htmlUrl: gh.htmlUrl, token });
    await ctx.cleanup();
    expect(ctx.commit).toBe(commit);
    expect(log.join('\n')).toContain(`cloning ${gh.htmlUrl}/${REPO}.git (branch dev)`);
    expect(gh.requests.some((q) => q.path.startsWith(`/${REPO}.git/`) && q.authorized)).toBe(true);

    const wrong = 'ghs_wrongwrongwrong';
    const failed = await prepareBuildContext(src, guard, async (l) => void log.push(l), { htmlUrl: gh.htmlUrl, token: wrong }).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(failed).toMatch(/^Cloning .* failed: .*(Authentication failed|could not read Username)/);
    expect(failed).not.toContain(wrong);
    expect(log.join('\n')).not.toContain(wrong);
    for (const t of [...gh.tokens, wrong]) expect(log.join('\n')).not.toContain(t);
    // An application cloning through an app that is gone fails saying so.
    await expect(prepareBuildContext(src, guard, async () => {})).rejects.toThrow(/GitHub app that no longer exists/);
  });

  it('no installation token in any answer', () => {
    expect(gh.tokens.length).toBeGreaterThan(3);
    for (const t of gh.tokens) for (const a of answers) expect(a).not.toContain(t);
  });
});
