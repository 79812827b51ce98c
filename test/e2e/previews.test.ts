/**
 * Preview deployments (docs/decisions/previews.md) on a real Docker Engine behind a real Caddy
 * proxy: a git repository on loopback whose main and refs/pull/7/head hold different pages. A
 * deploy with pr=7 builds the pull request's head and runs it beside the application at its
 * preview domain, the application still serving main's page; DELETE removes the preview's
 * container, volume and route.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, CADDY_IMAGE, dockerdAvailable, useDockerd } from '../helpers/dockerd.js';
import { gitDaemon } from '../helpers/git.js';
import { freePort } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { answers, ask } from './proxy-support.js';
import { Api, deployed } from './support.js';

describe.skipIf(!dockerdAvailable)('preview deployments (a pull request beside its application, through the proxy)', () => {
  const dockerd = useDockerd();
  let s: TestServer;
  let api: Api;
  let server: string;
  let project: string;
  let httpPort: number;
  let dir: string;
  let daemon: { port: number; stop(): void } | undefined;
  let repoUrl: string;

  const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, encoding: 'utf8' });
  const page = (text: string) => {
    const work = path.join(dir, 'work');
    writeFileSync(path.join(work, 'index.html'), `${text}\n`);
    writeFileSync(path.join(work, 'Dockerfile'), `FROM ${BUSYBOX_IMAGE}\nCOPY index.html /www/index.html\nCMD ["httpd", "-f", "-p", "8080", "-h", "/www"]\n`);
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', text);
  };
  const docker = (...args: string[]) => dockerd.docker(args).trim();

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-previews-'));
    const bare = path.join(dir, 'repos', 'app.git');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    writeFileSync(path.join(bare, 'git-daemon-export-ok'), '');
    execFileSync('git', ['init', '-q', '-b', 'main', path.join(dir, 'work')]);
    const work = path.join(dir, 'work');
    git(work, 'remote', 'add', 'origin', bare);
    page('main page');
    git(work, 'push', '-q', 'origin', 'main');
    // The pull request: a branch of its own, pushed only as GitHub keeps it (refs/pull/7/head).
    git(work, 'checkout', '-q', '-b', 'feature');
    page('pull request seven');
    git(work, 'push', '-q', 'origin', 'HEAD:refs/pull/7/head');
    daemon = await gitDaemon({ root: path.join(dir, 'repos') });
    repoUrl = `git://127.0.0.1:${daemon.port}/app.git`;
    httpPort = await freePort();
    s = await startTestServer({ apiRateLimit: 0 }, { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' });
    api = new Api(s.url, s.rootToken);
    server = (await api.ok('POST', '/servers', { ip: '127.0.0.1', name: 'dockerd', engine_endpoint: `unix://${dockerd.socket}` })).uuid;
    expect(await api.ok('POST', `/servers/${server}/validate`)).toMatchObject({ is_reachable: true, is_usable: true });
    project = (await api.ok('POST', '/projects', { name: 'previews' })).uuid;
    await api.ok('PUT', `/servers/${server}/proxy/configuration`, {
      configuration: `services:\n  caddy:\n    image: ${CADDY_IMAGE}\n    ports:\n      - 127.0.0.1:${httpPort}:80\n`,
    });
    await api.ok('PATCH', `/servers/${server}/proxy`, { proxy_type: 'caddy' });
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    daemon?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const place = () => ({ project_uuid: project, server_uuid: server, environment_name: 'production' });
  const deployPr = async (uuid: string, pr: number) => deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}&pr=${pr}`)).deployments[0].deployment_uuid, 120_000);

  it("deploy with pr runs the pull request's head at its preview domain beside main; GET lists it; DELETE removes container, volume and route", async () => {
    const app = await api.ok('POST', '/applications/public', {
      ...place(),
      git_repository: repoUrl,
      git_branch: 'main',
      build_pack: 'dockerfile',
      ports_exposes: '8080',
      domains: 'http://app.test',
      instant_deploy: false,
    });
    const uuid = app.uuid as string;
    await api.ok('POST', `/applications/${uuid}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
    await api.ok('POST', `/applications/${uuid}/envs`, { key: 'WHO', value: 'main' });
    await api.ok('POST', `/applications/${uuid}/envs`, { key: 'WHO', value: 'preview', is_preview: true });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 120_000);
    expect((await answers(httpPort, 'app.test', (a) => a.status === 200)).body).toBe('main page');
    expect((await api.ok('GET', `/applications/${uuid}`)).previews).toEqual([]);

    // Coolify's GET /deploy?uuid=…&pr=7 (berth: POST, the query as Coolify sends it).
    const d = await deployPr(uuid, 7);
    expect(d.pull_request_id).toBe(7);
    expect(d.logs).toContain('refs/pull/7/head');
    expect((await answers(httpPort, '7.app.test', (a) => a.status === 200)).body).toBe('pull request seven');
    expect((await ask(httpPort, 'app.test')).body).toBe('main page');
    const got = await api.ok('GET', `/applications/${uuid}`);
    expect(got.previews).toEqual([{ pull_request_id: 7, status: expect.stringMatching(/^running/), fqdn: 'http://7.app.test', created_at: expect.any(String) }]);
    expect(got.preview_url_template).toBe('{{pr_id}}.{{domain}}');
    // Its own container and volume; the application's environment with the preview's over it.
    expect(docker('inspect', '--format', '{{.State.Status}}', `${uuid}-pr-7`)).toBe('running');
    expect(docker('inspect', '--format', '{{json .Config.Env}}', `${uuid}-pr-7`)).toContain('WHO=preview');
    expect(docker('inspect', '--format', '{{json .Config.Env}}', uuid)).toContain('WHO=main');
    expect(docker('volume', 'ls', '--format', '{{.Name}}').split('\n')).toEqual(expect.arrayContaining([`${uuid}-data`, `${uuid}-data-pr-7`]));
    // The application's own deploys and rollback images never see the preview's.
    expect((await api.ok('GET', `/applications/${uuid}`)).docker_registry_image_name).toBe(`localhost/berth-app-${uuid}`);

    // A redeploy of the application keeps the preview; a redeploy of the preview keeps its domain.
    await deployPr(uuid, 7);
    expect((await answers(httpPort, '7.app.test', (a) => a.status === 200)).body).toBe('pull request seven');

    const unknown = await api.req('DELETE', `/applications/${uuid}/previews/8`);
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe('{"message":"Resource not found."}');
    const other = await s.team(`other ${Date.now()}`);
    const fromOther = await new Api(s.url, other.rootToken).req('DELETE', `/applications/${uuid}/previews/7`);
    expect(fromOther.status).toBe(404);
    expect(fromOther.text).toBe(unknown.text);

    const del = await api.ok('DELETE', `/applications/${uuid}/previews/7`);
    expect(del.message).toBe('Preview deployment deleted.');
    expect(del.removed).toEqual(expect.arrayContaining([`removed container ${uuid}-pr-7`, `removed volume ${uuid}-data-pr-7`]));
    expect(docker('ps', '-a', '--format', '{{.Names}}').split('\n')).not.toContain(`${uuid}-pr-7`);
    expect(docker('volume', 'ls', '--format', '{{.Name}}').split('\n')).not.toContain(`${uuid}-data-pr-7`);
    await answers(httpPort, '7.app.test', (a) => a.status === 404);
    expect((await ask(httpPort, 'app.test')).body).toBe('main page');
    expect((await api.ok('GET', `/applications/${uuid}`)).previews).toEqual([]);
    expect((await api.req('DELETE', `/applications/${uuid}/previews/7`)).status).toBe(404);

    // Deleting the application removes a preview it still has.
    await deployPr(uuid, 7);
    await api.ok('DELETE', `/applications/${uuid}`);
    expect(docker('ps', '-a', '--format', '{{.Names}}').split('\n')).not.toContain(`${uuid}-pr-7`);
    expect(docker('volume', 'ls', '--format', '{{.Name}}').split('\n')).not.toContain(`${uuid}-data-pr-7`);
    await answers(httpPort, '7.app.test', (a) => a.status === 404);
  }, 480_000);

  it('refuses pr where previews do not fit (an image application, with tag, bad ids) and checks preview_url_template', async () => {
    const image = await api.ok('POST', '/applications/dockerimage', { ...place(), docker_registry_image_name: BUSYBOX_IMAGE, domains: 'http://img.test' });
    const r = await api.req('POST', `/deploy?uuid=${image.uuid}&pr=3`);
    expect(r.status, r.text).toBe(422);
    expect(r.json.errors.pr[0]).toMatch(/not built from a git repository/);
    const both = await api.req('POST', '/deploy?tag=x&pr=3');
    expect(both.status).toBe(422);
    expect(both.json.errors.pr[0]).toMatch(/tag or pr/);
    expect((await api.req('POST', `/deploy?uuid=${image.uuid}&pr=-1`)).status).toBe(422);
    expect((await api.req('DELETE', `/applications/${image.uuid}/previews/abc`)).status).toBe(422);
    for (const bad of ['{{domain}}', 'pr {{pr_id}}.{{domain}}', 'x'.repeat(300)]) {
      const p = await api.req('PATCH', `/applications/${image.uuid}`, { preview_url_template: bad });
      expect(p.status, bad).toBe(422);
      expect(Object.keys(p.json.errors)).toEqual(['preview_url_template']);
    }
    await api.ok('PATCH', `/applications/${image.uuid}`, { preview_url_template: 'pr-{{pr_id}}.preview.example.com' });
    expect((await api.ok('GET', `/applications/${image.uuid}`)).preview_url_template).toBe('pr-{{pr_id}}.preview.example.com');
    await api.ok('DELETE', `/applications/${image.uuid}`);
  }, 60_000);
});
