/**
 * The doors of builds from source: Coolify's create bodies for an inline Dockerfile (base64) and
 * a public repository, checked before anything is stored; the repository host goes through the
 * outbound guard; a built application's image comes from its builds, not from a PATCH.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dump, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const place = () => ({ project_uuid: c.w.projectUuid, server_uuid: c.w.serverUuid, environment_name: 'production', ports_exposes: '80' });
const repo = { git_repository: 'https://git.example.test/team/app.git', git_branch: 'main', build_pack: 'dockerfile' };

describe('builds from source', () => {
  it('creates both kinds, unbuilt until deployed, with their source in the answer', async () => {
    const inline = await c.api('POST', '/applications/dockerfile', c.readWrite, { ...place(), dockerfile: Buffer.from('FROM busybox\nCMD ["true"]\n').toString('base64') });
    expect(inline.status).toBe(201);
    expect((await c.api('GET', `/applications/${inline.json.uuid}`, c.read)).json).toMatchObject({
      build_pack: 'dockerfile',
      dockerfile: 'FROM busybox\nCMD ["true"]\n',
      git_repository: null,
      docker_registry_image_name: `localhost/berth-app-${inline.json.uuid}`,
      docker_registry_image_tag: 'unbuilt',
    });
    const git = await c.api('POST', '/applications/public', c.readWrite, { ...place(), ...repo, base_directory: '/web', dockerfile_location: '/docker/Dockerfile' });
    expect(git.status).toBe(201);
    expect((await c.api('GET', `/applications/${git.json.uuid}`, c.read)).json).toMatchObject({ ...repo, base_directory: '/web', dockerfile_location: '/docker/Dockerfile', dockerfile: null });
    // Its image is whatever the last build made.
    const p = await c.api('PATCH', `/applications/${git.json.uuid}`, c.write, { docker_registry_image_tag: 'v2' });
    expect(p.status).toBe(422);
    expect(p.json.errors.docker_registry_image_tag[0]).toMatch(/built from a Dockerfile/);
  });

  it("nixpacks (Coolify's default) and static: stored with the steps given, shown as Coolify shows them", async () => {
    const nix = await c.api('POST', '/applications/public', c.write, {
      ...place(),
      ...repo,
      build_pack: 'nixpacks',
      install_command: '',
      build_command: 'npm run build:prod',
      start_command: 'node dist/server.js',
      publish_directory: null,
    });
    expect(nix.status, nix.text).toBe(201);
    expect((await c.api('GET', `/applications/${nix.json.uuid}`, c.read)).json).toMatchObject({
      build_pack: 'nixpacks',
      install_command: null,
      build_command: 'npm run build:prod',
      start_command: 'node dist/server.js',
      publish_directory: null,
      dockerfile_location: null,
      docker_registry_image_tag: 'unbuilt',
    });
    const site = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, build_pack: 'static', publish_directory: '/dist' });
    expect(site.status, site.text).toBe(201);
    expect((await c.api('GET', `/applications/${site.json.uuid}`, c.read)).json).toMatchObject({ build_pack: 'static', publish_directory: '/dist', start_command: null });
    const compose = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, build_pack: 'dockercompose' });
    expect(compose.json.errors.build_pack[0]).toMatch(/compose file.*POST \/services/);
  });

  it('refuses what is not base64, other build packs, unsafe URLs, branches and paths; nothing is stored', async () => {
    const before = await dump(c.s);
    const bad: Array<[string, Record<string, unknown>, string]> = [
      ['/applications/dockerfile', { dockerfile: 'FROM busybox' }, 'dockerfile'],
      ['/applications/dockerfile', { dockerfile: Buffer.from('FROM busybox\n\u00e9\n', 'utf8').toString('base64') }, 'dockerfile'],
      ['/applications/public', { ...repo, build_pack: 'heroku' }, 'build_pack'],
      ['/applications/public', { ...repo, build_pack: 'dockercompose' }, 'build_pack'],
      ['/applications/public', { ...repo, build_pack: 'dockerimage' }, 'build_pack'],
      // A step belongs to the generated builds; a static site has no start command and serves on 80.
      ['/applications/public', { ...repo, install_command: 'npm ci' }, 'install_command'],
      ['/applications/public', { ...repo, build_pack: 'nixpacks', dockerfile_location: '/Dockerfile' }, 'dockerfile_location'],
      ['/applications/public', { ...repo, build_pack: 'nixpacks', start_command: 'node a.js\nUSER root' }, 'start_command'],
      ['/applications/public', { ...repo, build_pack: 'nixpacks', build_command: 'x'.repeat(2001) }, 'build_command'],
      ['/applications/public', { ...repo, build_pack: 'static', start_command: 'nginx' }, 'start_command'],
      ['/applications/public', { ...repo, build_pack: 'static', ports_exposes: '3000' }, 'ports_exposes'],
      ['/applications/public', { ...repo, build_pack: 'static', publish_directory: '/../dist' }, 'publish_directory'],
      ['/applications/dockerfile', { dockerfile: Buffer.from('FROM busybox\n').toString('base64'), start_command: 'x' }, 'start_command'],
      ['/applications/public', { ...repo, git_repository: 'file:///etc/passwd' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'ext::sh -c touch% /tmp/pwned' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'https://user:secret@git.example.test/app.git' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'http://169.254.169.254/latest' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'git://10.1.2.3/app.git' }, 'git_repository'],
      // What git, curl and WHATWG URL read differently (issue 22): refused at the door.
      ['/applications/public', { ...repo, git_repository: 'http://public.test\\@127.0.0.1:23751/pwn' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'http://public.test\\@169.254.169.254/pwn' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'http://public.test@127.0.0.1:23751/pwn' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'http://public.test%40127.0.0.1:23751/pwn' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'git://public.test/x@[::1]/pwn' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'https://git.example.test/app.git\t' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'https://gït.example.test/app.git' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'http://127.1/app.git' }, 'git_repository'],
      ['/applications/public', { ...repo, git_repository: 'https://git.example.test/app.git?x=1' }, 'git_repository'],
      ['/applications/public', { ...repo, git_branch: '--upload-pack=touch /tmp/x' }, 'git_branch'],
      ['/applications/public', { ...repo, base_directory: '/../../etc' }, 'base_directory'],
      ['/applications/public', { ...repo, dockerfile_location: '/a\nb' }, 'dockerfile_location'],
    ];
    for (const [path, body, field] of bad) {
      const r = await c.api('POST', path, c.write, { ...place(), ...body });
      expect(r.status, `${field}: ${r.text}`).toBe(422);
      expect(Object.keys(r.json.errors)).toContain(field);
    }
    const backslash = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, git_repository: 'http://public.test\\@127.0.0.1:23751/pwn' });
    expect(backslash.json.errors.git_repository[0]).toMatch(/backslash/);
    expect((await c.api('POST', '/applications/public', c.read, { ...place(), ...repo })).status).toBe(403);
    expect(await dump(c.s)).toEqual(before);
  });
});
