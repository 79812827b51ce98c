/**
 * A private repository cloned by deploy key from a real OpenSSH server on loopback (a bare
 * repository reached with the team's stored key), built and run on a real engine; the git host's
 * key pinned at the first clone and a different one refused; a key the host does not know fails
 * with a clear reason. Then rollback: two deployments with different content, a rollback to the
 * first image answers the old content, and the kept images stay bounded (docker_images_to_keep).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeKey, sshdAvailable, useSshd } from '../helpers/sshd.js';
import { Api, deployed, registerEngines, type Platform } from './support.js';

const KEEP_RUNNING = `["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]`;
const available = enginesAvailable && sshdAvailable;

describe.skipIf(!available)(`private repositories by deploy key, and rollback ${available ? '' : `(skipped: ${enginesUnavailableReason || 'no sshd'})`}`, () => {
  const engines = useEngines();
  const sshd = useSshd();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let dir: string;
  let repoUrl: string;
  let keyUuid: string;

  const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, encoding: 'utf8' });
  const commit = (files: Record<string, string>, message: string) => {
    for (const [f, text] of Object.entries(files)) writeFileSync(path.join(dir, 'work', f), text);
    git(path.join(dir, 'work'), 'add', '-A');
    git(path.join(dir, 'work'), 'commit', '-q', '-m', message);
    git(path.join(dir, 'work'), 'push', '-q', 'origin', 'main');
  };
  const place = () => ({
    project_uuid: p.project,
    server_uuid: p.serverA,
    destination_uuid: p.destA,
    environment_name: 'production',
    ports_exposes: '80',
    git_branch: 'main',
    build_pack: 'dockerfile',
  });
  const exec = (container: string, cmd: string) => engines.podman('a', ['exec', container, 'sh', '-c', cmd]).trim();
  const deployOf = async (uuid: string) => (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid as string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-sshgit-'));
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(dir, 'app.git')]);
    mkdirSync(path.join(dir, 'work'));
    execFileSync('git', ['init', '-q', '-b', 'main', path.join(dir, 'work')]);
    git(path.join(dir, 'work'), 'remote', 'add', 'origin', path.join(dir, 'app.git'));
    commit({ Dockerfile: `FROM ${engines.image}\nCOPY hello.txt /hello.txt\nCMD ${KEEP_RUNNING}\n`, 'hello.txt': 'private, first\n' }, 'first');
    // The SSH account that serves the repository: root of the loopback sshd, with the deploy key only.
    const key = makeKey();
    sshd.setAuthorized('root', [key.publicLine]);
    repoUrl = `ssh://root@127.0.0.1:${sshd.port}${path.join(dir, 'app.git')}`;
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image }, { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    keyUuid = (await api.ok('POST', '/security/keys', { name: 'deploy key', private_key: key.text })).uuid;
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('clones over SSH with the team key, pins the host key at the first clone, builds and runs; a wrong key and a different host key are refused', async () => {
    const { uuid } = await api.ok('POST', '/applications/private-deploy-key', { ...place(), private_key_uuid: keyUuid, git_repository: repoUrl });
    const d = await deployed(api, await deployOf(uuid), 90_000);
    expect(d.logs).toMatch(/cloning .* over SSH from 127\.0\.0\.1:\d+/);
    expect(d.logs).toMatch(/pinned the git host's key \(ssh-ed25519\)/);
    expect(exec(uuid, 'cat /hello.txt')).toBe('private, first');
    const hostPub = readFileSync(path.join(sshd.dir, 'host_ed25519.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ');
    const row = await s.db.selectFrom('resources').select('config').where('uuid', '=', uuid).executeTakeFirstOrThrow();
    expect(JSON.parse(row.config).source.git_host_key).toBe(hostPub);

    // The host key given at create is the one checked: another key is refused before anything is sent.
    const stranger = makeKey().publicLine.split(' ').slice(0, 2).join(' ');
    const wrongHost = await api.ok('POST', '/applications/private-deploy-key', { ...place(), private_key_uuid: keyUuid, git_repository: repoUrl, git_host_key: `github.com ${stranger}` });
    const refused = await deployed(api, await deployOf(wrongHost.uuid), 60_000, 'failed');
    expect(refused.logs).toMatch(/Cloning .* failed: the git host's key is not the one pinned for this application/);
    const rightHost = await api.ok('POST', '/applications/private-deploy-key', { ...place(), private_key_uuid: keyUuid, git_repository: repoUrl, git_host_key: hostPub });
    const ok = await deployed(api, await deployOf(rightHost.uuid), 90_000);
    expect(ok.logs).not.toMatch(/pinned/);

    // A key the SSH account does not accept: git's reason, said plainly.
    const other = makeKey();
    const otherKey = (await api.ok('POST', '/security/keys', { name: 'not a deploy key', private_key: other.text })).uuid;
    const wrongKey = await api.ok('POST', '/applications/private-deploy-key', { ...place(), private_key_uuid: otherKey, git_repository: repoUrl });
    const denied = await deployed(api, await deployOf(wrongKey.uuid), 60_000, 'failed');
    expect(denied.logs).toMatch(/the git host refused the private key \(Permission denied \(publickey/);
    // No deploy-key file outlives a clone.
    expect(execFileSync('sh', ['-c', `find ${os.tmpdir()} -maxdepth 2 -path '*berth-build-*' -name deploy-key 2>/dev/null || true`], { encoding: 'utf8' }).trim()).toBe('');
    for (const u of [wrongHost.uuid, rightHost.uuid, wrongKey.uuid]) await api.ok('DELETE', `/applications/${u}`);
  }, 300_000);

  it('rollback runs an earlier image again through the deployment queue; kept images stay bounded', async () => {
    const { uuid } = await api.ok('POST', '/applications/private-deploy-key', { ...place(), private_key_uuid: keyUuid, git_repository: repoUrl, docker_images_to_keep: 1 });
    const first = await deployed(api, await deployOf(uuid), 90_000);
    commit({ 'hello.txt': 'private, second\n' }, 'second');
    const second = await deployed(api, await deployOf(uuid), 90_000);
    expect(exec(uuid, 'cat /hello.txt')).toBe('private, second');

    const imgs = await api.ok('GET', `/applications/${uuid}/rollback-images`);
    expect(imgs.current).toBe(second.deployment_uuid);
    expect(imgs.images.map((i: { tag: string }) => i.tag)).toEqual([second.deployment_uuid, first.deployment_uuid]);
    expect(imgs.images.map((i: { is_current: boolean }) => i.is_current)).toEqual([true, false]);

    const back = await api.ok('POST', `/applications/${uuid}/rollback`, { commit: first.deployment_uuid });
    const rb = await deployed(api, back.deployment_uuid, 90_000);
    expect(rb).toMatchObject({ kind: 'deploy', rollback: true });
    expect(rb.logs).toContain(`rolling back to localhost/berth-app-${uuid}:${first.deployment_uuid}`);
    expect(rb.logs).not.toMatch(/cloning|COPY/);
    expect(exec(uuid, 'cat /hello.txt')).toBe('private, first');
    expect((await api.ok('GET', `/applications/${uuid}`)).docker_registry_image_tag).toBe(first.deployment_uuid);
    expect((await api.ok('GET', `/applications/${uuid}/rollback-images`)).current).toBe(first.deployment_uuid);

    // A third build: one image besides the running one is kept, the oldest is removed from the engine.
    commit({ 'hello.txt': 'private, third\n' }, 'third');
    const third = await deployed(api, await deployOf(uuid), 90_000);
    expect(exec(uuid, 'cat /hello.txt')).toBe('private, third');
    expect(third.logs).toMatch(/removed old image .* \(keeping 1 for rollback\)/);
    const kept = (await api.ok('GET', `/applications/${uuid}/rollback-images`)).images.map((i: { tag: string }) => i.tag);
    expect(kept).toEqual([third.deployment_uuid, second.deployment_uuid]);
    const gone = await api.req('POST', `/applications/${uuid}/rollback`, { commit: first.deployment_uuid });
    expect(gone.status).toBe(422);
    expect(gone.json.errors.commit[0]).toMatch(/keeps no image/);
    await api.ok('DELETE', `/applications/${uuid}`);
  }, 360_000);
});
