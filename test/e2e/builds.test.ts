/**
 * Builds from source on a real engine: a public git repository served on loopback by `git
 * daemon` (no internet) and an inline Dockerfile, both based on the test image. A deploy clones,
 * builds through the Engine API and runs the image; a broken Dockerfile fails the deployment
 * with the engine's words in its logs and leaves the running container alone.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, enginesUnavailableReason, useEngines } from '../helpers/engines.js';
import { gitDaemon } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, registerEngines, until, type Platform } from './support.js';

const KEEP_RUNNING = `["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]`;

describe.skipIf(!enginesAvailable)(`builds from source ${enginesAvailable ? '' : `(skipped: ${enginesUnavailableReason})`}`, () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let dir: string;
  let daemon: { port: number; stop(): void } | undefined;
  let repoUrl: string;

  const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, encoding: 'utf8' });
  /** Commits `files` on main in the work tree and pushes them to the served repository. */
  const commit = (files: Record<string, string>, message: string) => {
    for (const [f, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, 'work', f)), { recursive: true });
      writeFileSync(path.join(dir, 'work', f), text);
    }
    git(path.join(dir, 'work'), 'add', '-A');
    git(path.join(dir, 'work'), 'commit', '-q', '-m', message);
    git(path.join(dir, 'work'), 'push', '-q', 'origin', 'main');
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-git-'));
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(dir, 'repos', 'app.git')]);
    writeFileSync(path.join(dir, 'repos', 'app.git', 'git-daemon-export-ok'), '');
    execFileSync('git', ['init', '-q', '-b', 'main', path.join(dir, 'work')]);
    git(path.join(dir, 'work'), 'remote', 'add', 'origin', path.join(dir, 'repos', 'app.git'));
    commit(
      { 'app/Dockerfile': `FROM ${engines.image}\nCOPY hello.txt /hello.txt\nCMD ${KEEP_RUNNING}\n`, 'app/hello.txt': 'hello from git, first commit\n', 'README.md': 'not in the context\n' },
      'first',
    );
    daemon = await gitDaemon({ root: path.join(dir, 'repos') });
    repoUrl = `git://127.0.0.1:${daemon.port}/app.git`;
    s = await startTestServer({ apiRateLimit: 0, helperImage: engines.image }, { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    daemon?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const place = () => ({ project_uuid: p.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production', ports_exposes: '80' });
  const exec = (container: string, cmd: string) => engines.podman('a', ['exec', container, 'sh', '-c', cmd]).trim();

  it('a public repository: cloned, built from its base directory, run; a broken commit fails the deploy and the old container stays', async () => {
    const { uuid } = await api.ok('POST', '/applications/public', {
      ...place(),
      git_repository: repoUrl,
      git_branch: 'main',
      build_pack: 'dockerfile',
      base_directory: '/app',
      dockerfile_location: '/Dockerfile',
    });
    const d = await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 90_000);
    expect(d.logs).toMatch(/building commit [0-9a-f]{40}/);
    expect(d.logs).toContain('COPY hello.txt /hello.txt');
    expect(exec(uuid, 'cat /hello.txt')).toBe('hello from git, first commit');
    const app = await api.ok('GET', `/applications/${uuid}`);
    expect(app).toMatchObject({
      build_pack: 'dockerfile',
      git_repository: repoUrl,
      git_branch: 'main',
      base_directory: '/app',
      docker_registry_image_name: `localhost/berth-app-${uuid}`,
      docker_registry_image_tag: d.deployment_uuid ?? expect.any(String),
    });

    commit({ 'app/Dockerfile': `FROM ${engines.image}\nBOGUS instruction\n` }, 'broken');
    const broken = (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid;
    const failed = await until(
      'the broken build to fail',
      async () => {
        const r = await api.ok('GET', `/deployments/${broken}`);
        return ['queued', 'in_progress'].includes(r.status) ? undefined : r;
      },
      90_000,
    );
    expect(failed.status).toBe('failed');
    expect(failed.logs).toMatch(/BOGUS/);
    // Nothing was replaced: the first build's container still runs the first commit.
    expect(exec(uuid, 'cat /hello.txt')).toBe('hello from git, first commit');
    expect((await api.ok('GET', `/applications/${uuid}`)).docker_registry_image_tag).toBe(app.docker_registry_image_tag);
  }, 240_000);

  it('an inline Dockerfile builds and runs; a branch that does not exist fails with git’s reason', async () => {
    const dockerfile = Buffer.from(`FROM ${engines.image}\nRUN echo inline > /made.txt\nCMD ${KEEP_RUNNING}\n`).toString('base64');
    const { uuid } = await api.ok('POST', '/applications/dockerfile', { ...place(), dockerfile });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 90_000);
    expect(exec(uuid, 'cat /made.txt')).toBe('inline');

    const missing = await api.ok('POST', '/applications/public', { ...place(), git_repository: repoUrl, git_branch: 'no-such-branch', build_pack: 'dockerfile' });
    const dep = (await api.ok('POST', `/deploy?uuid=${missing.uuid}`)).deployments[0].deployment_uuid;
    const r = await until(
      'the clone to fail',
      async () => {
        const x = await api.ok('GET', `/deployments/${dep}`);
        return ['queued', 'in_progress'].includes(x.status) ? undefined : x;
      },
      60_000,
    );
    expect(r.status).toBe('failed');
    expect(r.logs).toMatch(/Cloning .* failed: .*no-such-branch/);
  }, 240_000);

  it('a URL git reads otherwise than the guard (issue 22): refused at the door, and a record from before fails its deploy with nothing reaching the loopback listener', async () => {
    const requests: string[] = [];
    const listener = http.createServer((q, r) => (requests.push(`${q.method} ${q.url}`), r.end()));
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    try {
      const port = (listener.address() as net.AddressInfo).port;
      const sneaky = `http://public.test\\@127.0.0.1:${port}/pwn`;
      const door = await api.req('POST', '/applications/public', { ...place(), git_repository: sneaky, git_branch: 'main', build_pack: 'dockerfile' });
      expect(door.status).toBe(422);
      expect(door.json.errors.git_repository[0]).toMatch(/backslash/);
      // As stored before the rule: the clone reads the URL with the same parser and never starts git.
      const { uuid } = await api.ok('POST', '/applications/public', { ...place(), git_repository: repoUrl, git_branch: 'main', build_pack: 'dockerfile', base_directory: '/app' });
      const row = await s.db.selectFrom('resources').select(['id', 'config']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
      const config = JSON.parse(row.config);
      config.source.git_repository = sneaky;
      await s.db
        .updateTable('resources')
        .set({ config: JSON.stringify(config) })
        .where('id', '=', row.id)
        .execute();
      const dep = (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid;
      const r = await until(
        'the deploy to fail',
        async () => {
          const x = await api.ok('GET', `/deployments/${dep}`);
          return ['queued', 'in_progress'].includes(x.status) ? undefined : x;
        },
        60_000,
      );
      expect(r.status).toBe('failed');
      expect(r.logs).toMatch(/refused to connect: Must not contain a backslash/);
      expect(requests).toEqual([]);
    } finally {
      listener.close();
    }
  }, 120_000);
});
