/**
 * build_pack "dockercompose" on a real engine (issue 42): a repository served on loopback by
 * `git daemon` (no internet) whose compose file has one service built from a Dockerfile in the
 * repository and one run from a local image. The deploy builds and runs both as a service's
 * containers (`<uuid>-<name>`); a change pushed to the repository is rebuilt at the next deploy;
 * status, logs per container, stop/start/restart and delete act on both; the compose file's
 * refusals (host reach, a missing file) fail the deployment and leave what runs alone.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { gitDaemon } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, containerState, deployed, KEEP_RUNNING, registerEngines, until, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)(`dockercompose applications ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let dir: string;
  let daemon: { port: number; stop(): void } | undefined;
  let base: string;
  const made: string[] = [];

  const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, encoding: 'utf8' });
  /** Commits `files` to repository `name` on main, made on first use (as test/e2e/buildpacks.test.ts). */
  const commit = (name: string, files: Record<string, string>) => {
    const work = path.join(dir, 'work', name);
    const bare = path.join(dir, 'repos', `${name}.git`);
    if (!existsSync(bare)) {
      execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
      writeFileSync(path.join(bare, 'git-daemon-export-ok'), '');
      execFileSync('git', ['init', '-q', '-b', 'main', work]);
      git(work, 'remote', 'add', 'origin', bare);
    }
    for (const [f, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(work, f)), { recursive: true });
      writeFileSync(path.join(work, f), text);
    }
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '--allow-empty', '-m', 'change');
    git(work, 'push', '-q', 'origin', 'main');
    return `${base}/${name}.git`;
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-compose-app-'));
    mkdirSync(path.join(dir, 'repos'));
    daemon = await gitDaemon({ root: path.join(dir, 'repos') });
    base = `git://127.0.0.1:${daemon.port}`;
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image }, { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 120_000);
  afterAll(async () => {
    for (const uuid of made) await api?.req('DELETE', `/applications/${uuid}`);
    await s?.stop();
    daemon?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  const place = () => ({ project_uuid: p.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production' });
  const deploy = async (uuid: string, expected: 'finished' | 'failed' = 'finished') => deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 180_000, expected);
  const running = (name: string) => containerState(engines, 'a', name)?.running ?? false;
  const both = (uuid: string, want: boolean) =>
    until(`${uuid}'s containers ${want ? 'running' : 'stopped'}`, async () => (running(`${uuid}-web`) === want && running(`${uuid}-cache`) === want ? true : undefined), 60_000, 300);

  /** A compose file with one service built from web/ in the repository and one from the engine's local image. */
  const composeFile = () =>
    [
      'services:',
      '  web:',
      '    build:',
      '      context: ./web',
      `    command: ${JSON.stringify(['sh', '-c', `cat /built.txt; echo "greeting $GREETING"; ${KEEP_RUNNING}`])}`,
      '    environment:',
      '      GREETING: hello',
      '    depends_on: [cache]',
      '  cache:',
      `    image: ${engines.image}`,
      `    command: ${JSON.stringify(['sh', '-c', `echo cache up; ${KEEP_RUNNING}`])}`,
      '    volumes:',
      '      - data:/data',
      'volumes:',
      '  data:',
      '',
    ].join('\n');
  const webDockerfile = (text: string) => `FROM ${engines.image}\nRUN echo "${text}" > /built.txt\n`;

  it('deploys both services (one built from the repository, one from a local image), rebuilds on a pushed change, and stops, starts, restarts and deletes them together', async () => {
    const repo = commit('compose', { 'docker-compose.yaml': composeFile(), 'web/Dockerfile': webDockerfile('built v1') });
    const created = await api.ok('POST', '/applications/public', {
      ...place(),
      git_repository: repo,
      git_branch: 'main',
      build_pack: 'dockercompose',
      ports_exposes: '80',
      docker_compose_location: '/docker-compose.yaml',
      instant_deploy: true,
    });
    const uuid = created.uuid as string;
    made.push(uuid);
    const first = await deployed(api, created.deployment_uuid, 180_000);
    expect(first.logs).toContain(`compose file /docker-compose.yaml: cache (${engines.image}), web (built from the repository)`);
    expect(first.logs).toContain('building web from web (Dockerfile)');
    expect(first.logs).toContain(`built localhost/berth-app-${uuid}-web:${first.deployment_uuid}`);
    await both(uuid, true);
    expect(engines.podman('a', ['exec', `${uuid}-web`, 'cat', '/built.txt']).trim()).toBe('built v1');
    expect(containerState(engines, 'a', `${uuid}-web`)!.image).toBe(`localhost/berth-app-${uuid}-web:${first.deployment_uuid}`);
    expect(containerState(engines, 'a', `${uuid}-cache`)!.mounts.map((m) => m.Destination)).toEqual(['/data']);

    const app = await api.ok('GET', `/applications/${uuid}`);
    expect(app).toMatchObject({ build_pack: 'dockercompose', docker_compose_location: '/docker-compose.yaml', docker_compose_raw: composeFile() });
    await until('the status to read running', async () => ((await api.ok('GET', `/applications/${uuid}`)).status.startsWith('running') ? true : undefined), 30_000, 500);
    // Logs: every container's, prefixed, or one compose service's.
    await until(
      'the logs to show both',
      async () => {
        const l = (await api.ok('GET', `/applications/${uuid}/logs`)).logs as string;
        return l.includes(`[${uuid}-web] built v1`) && l.includes(`[${uuid}-cache] cache up`) ? true : undefined;
      },
      20_000,
      500,
    );
    const web = (await api.ok('GET', `/applications/${uuid}/logs?sub_service_name=web`)).logs as string;
    expect(web).toContain('built v1\ngreeting hello');
    expect(web).not.toContain('cache up');
    expect((await api.req('GET', `/applications/${uuid}/logs?sub_service_name=nope`)).status).toBe(404);

    // A change pushed to the repository is built at the next deploy.
    commit('compose', { 'web/Dockerfile': webDockerfile('built v2') });
    const second = await deploy(uuid);
    expect(second.logs).toContain(`built localhost/berth-app-${uuid}-web:${second.deployment_uuid}`);
    await both(uuid, true);
    expect(engines.podman('a', ['exec', `${uuid}-web`, 'cat', '/built.txt']).trim()).toBe('built v2');

    // A compose file berth refuses fails the deployment naming why; what runs stays.
    commit('compose', { 'docker-compose.yaml': composeFile().replace('      - data:/data', '      - /etc:/host-etc') });
    const refused = await deploy(uuid, 'failed');
    expect(refused.logs).toMatch(/reaches into the host:\n.*services\.cache\.volumes/);
    expect(engines.podman('a', ['exec', `${uuid}-web`, 'cat', '/built.txt']).trim()).toBe('built v2');
    expect((await api.ok('GET', `/applications/${uuid}`)).docker_compose_raw).toBe(composeFile());
    commit('compose', { 'docker-compose.yaml': composeFile() });

    await api.ok('POST', `/applications/${uuid}/stop`);
    await both(uuid, false);
    await api.ok('POST', `/applications/${uuid}/start`);
    await both(uuid, true);
    const before = containerState(engines, 'a', `${uuid}-web`)!;
    await api.ok('POST', `/applications/${uuid}/restart`);
    await until('web restarted', async () => (engines.api('a', 'GET', `/containers/${uuid}-web/json`).body.includes('"Running":true') ? true : undefined), 30_000);
    await both(uuid, true);
    expect(containerState(engines, 'a', `${uuid}-web`)!.image).toBe(before.image);

    expect((await api.req('DELETE', `/applications/${uuid}`)).status).toBeLessThan(300);
    made.splice(made.indexOf(uuid), 1);
    await until('both containers removed', async () => (!containerState(engines, 'a', `${uuid}-web`) && !containerState(engines, 'a', `${uuid}-cache`) ? true : undefined), 60_000, 500);
  }, 600_000);

  it('a repository without the compose file fails its deployment naming the file looked for', async () => {
    const repo = commit('no-compose', { 'README.md': 'nothing\n' });
    const { uuid } = await api.ok('POST', '/applications/public', {
      ...place(),
      git_repository: repo,
      git_branch: 'main',
      build_pack: 'dockercompose',
      ports_exposes: '80',
      docker_compose_location: '/deploy/compose.yml',
    });
    made.push(uuid);
    const d = await deploy(uuid, 'failed');
    expect(d.logs).toContain('The repository has no /deploy/compose.yml on branch main (docker_compose_location, relative to base_directory).');
  }, 120_000);
});
