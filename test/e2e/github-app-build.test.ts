/**
 * A private repository through a GitHub app, built and run on a real engine: the GitHub stand-in
 * (test/helpers/github.ts) checks the app's JWT against its public key, issues installation
 * tokens and serves the repository over smart HTTP only to x-access-token. Each deploy mints a
 * fresh token and clones with it; the token is in no answer, deployment log or stored record.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { fakeGithub, type FakeGithub } from '../helpers/github.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, registerEngines, type Platform } from './support.js';

const KEEP_RUNNING = `["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]`;
const REPO = 'acme/private-app';

describe.skipIf(!enginesAvailable)(`a private repository through a GitHub app ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let dir: string;
  let gh: FakeGithub;
  let appUuid: string;

  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd: path.join(dir, 'work'), encoding: 'utf8' });
  const commit = (files: Record<string, string>, message: string) => {
    for (const [f, text] of Object.entries(files)) writeFileSync(path.join(dir, 'work', f), text);
    git('add', '-A');
    git('commit', '-q', '-m', message);
    git('push', '-q', 'origin', 'main');
  };
  const exec = (container: string, cmd: string) => engines.podman('a', ['exec', container, 'sh', '-c', cmd]).trim();

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-ghbuild-'));
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(dir, 'repos', `${REPO}.git`)]);
    execFileSync('git', ['init', '-q', '-b', 'main', path.join(dir, 'work')]);
    git('remote', 'add', 'origin', path.join(dir, 'repos', `${REPO}.git`));
    commit({ Dockerfile: `FROM ${engines.image}\nCOPY hello.txt /hello.txt\nCMD ${KEEP_RUNNING}\n`, 'hello.txt': 'through the app, first\n' }, 'first');
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    gh = await fakeGithub({ appId: 9001, installationId: 31, publicKey, root: path.join(dir, 'repos'), repositories: [REPO] });
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image }, { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    const key = (await api.ok('POST', '/security/keys', { name: 'app key', private_key: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() })).uuid;
    appUuid = (
      await api.ok('POST', '/github-apps', {
        name: 'Acme',
        api_url: gh.apiUrl,
        html_url: gh.htmlUrl,
        app_id: 9001,
        installation_id: 31,
        client_id: 'Iv1.acme',
        client_secret: 'secret',
        webhook_secret: 'hook',
        private_key_uuid: key,
      })
    ).uuid;
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    await gh?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates, deploys (token minted, repository cloned with it, image built and run), redeploys a new commit with a new token; no token anywhere berth answers or keeps', async () => {
    const created = await api.req('POST', '/applications/private-github-app', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      ports_exposes: '80',
      github_app_uuid: appUuid,
      git_repository: REPO,
      git_branch: 'main',
      build_pack: 'dockerfile',
      instant_deploy: true,
    });
    expect(created.status, created.text).toBe(201);
    const { uuid, deployment_uuid } = created.json;
    const first = await deployed(api, deployment_uuid, 90_000);
    expect(first.logs).toContain(`cloning ${gh.htmlUrl}/${REPO}.git (branch main) from 127.0.0.1:`);
    expect(first.logs).toContain('with a GitHub app installation token');
    expect(first.logs).toMatch(/building commit [0-9a-f]{40}/);
    expect(exec(uuid, 'cat /hello.txt')).toBe('through the app, first');
    expect(gh.requests.some((q) => q.path === `/${REPO}.git/git-upload-pack` && q.authorized)).toBe(true);
    // git asked without credentials never got through.
    expect(gh.requests.filter((q) => q.path.startsWith(`/${REPO}.git/`) && !q.authorized)).toEqual([]);

    commit({ 'hello.txt': 'through the app, second\n' }, 'second');
    const tokensBefore = gh.tokens.length;
    const second = await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 90_000);
    expect(exec(uuid, 'cat /hello.txt')).toBe('through the app, second');
    expect(gh.tokens.length).toBe(tokensBefore + 1);

    const seen = [
      created.text,
      JSON.stringify(first),
      JSON.stringify(second),
      JSON.stringify(await api.ok('GET', `/applications/${uuid}`)),
      JSON.stringify(await api.ok('GET', `/deployments/applications/${uuid}`).catch(() => null)),
      JSON.stringify(await s.db.selectFrom('resources').select('config').execute()),
      JSON.stringify(await s.db.selectFrom('deployments').select('logs').execute()),
    ].join('\n');
    expect(gh.tokens.length).toBeGreaterThanOrEqual(3);
    for (const t of gh.tokens) expect(seen).not.toContain(t);
  }, 300_000);
});
