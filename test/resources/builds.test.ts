/**
 * The doors of builds from source: Coolify's create bodies for an inline Dockerfile (base64) and
 * a public repository, checked before anything is stored; the repository host goes through the
 * outbound guard; a built application's image comes from its builds, not from a PATCH.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyRoutes } from '../../src/engine/proxy.js';
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
  });

  it('dockercompose: stored with its compose file location and per-service domains, read back as Coolify shows them', async () => {
    const compose = await c.api('POST', '/applications/public', c.write, {
      ...place(),
      ...repo,
      build_pack: 'dockercompose',
      docker_compose_domains: [
        { name: 'web', domain: 'https://web.compose.example.test, https://www.compose.example.test' },
        { name: 'db', domain: null },
      ],
    });
    expect(compose.status, compose.text).toBe(201);
    const shown = (await c.api('GET', `/applications/${compose.json.uuid}`, c.read)).json;
    expect(shown).toMatchObject({
      build_pack: 'dockercompose',
      docker_compose_location: '/docker-compose.yaml',
      docker_compose_domains: JSON.stringify({ web: { domain: 'https://web.compose.example.test,https://www.compose.example.test' } }),
      dockerfile_location: null,
    });
    // The compose file may hold secrets: a read token does not see it (as a service's).
    expect(shown).not.toHaveProperty('docker_compose_raw');
    // Once a deploy has read the compose file, the proxy routes each compose service's domains to its container.
    const row = await c.s.db.selectFrom('resources').select(['id', 'config', 'destination_id']).where('uuid', '=', compose.json.uuid).executeTakeFirstOrThrow();
    const read = {
      docker_compose_raw: '',
      volumes: [],
      commit: null,
      containers: [
        { name: 'web', ports: ['8080'] },
        { name: 'db', ports: [] },
      ],
    };
    await c.s.db
      .updateTable('resources')
      .set({ config: JSON.stringify({ ...JSON.parse(row.config), compose: read }) })
      .where('id', '=', row.id)
      .execute();
    const dest = await c.s.db.selectFrom('destinations').select('server_id').where('id', '=', row.destination_id).executeTakeFirstOrThrow();
    const routes = (await proxyRoutes(c.s.db, dest.server_id)).filter((r) => r.upstream.startsWith(compose.json.uuid));
    expect(routes.map((r) => [r.host, r.upstream, r.port])).toEqual([
      ['web.compose.example.test', `${compose.json.uuid}-web`, 8080],
      ['www.compose.example.test', `${compose.json.uuid}-web`, 8080],
    ]);
    // A compose service's domain is claimed as any resource's.
    const taken = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, domains: 'https://web.compose.example.test' });
    expect(taken.status).toBe(409);
    expect(taken.json.message).toContain('(web)');
    const other = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, build_pack: 'dockercompose', docker_compose_location: '/deploy/compose.yml' });
    expect((await c.api('GET', `/applications/${other.json.uuid}`, c.read)).json).toMatchObject({ docker_compose_location: '/deploy/compose.yml', docker_compose_domains: null });
    // PATCH: another location and other domains; domains of the application itself are refused by name.
    expect(
      (
        await c.api('PATCH', `/applications/${other.json.uuid}`, c.write, {
          docker_compose_location: '/compose.yaml',
          docker_compose_domains: [{ name: 'api', domain: 'https://api.compose.example.test' }],
        })
      ).status,
    ).toBe(200);
    expect((await c.api('GET', `/applications/${other.json.uuid}`, c.read)).json).toMatchObject({
      docker_compose_location: '/compose.yaml',
      docker_compose_domains: JSON.stringify({ api: { domain: 'https://api.compose.example.test' } }),
    });
    expect((await c.api('PATCH', `/applications/${other.json.uuid}`, c.write, { domains: 'https://x.compose.example.test' })).json.errors.domains[0]).toContain('docker_compose_domains');
    expect((await c.api('PATCH', `/applications/${other.json.uuid}`, c.write, { docker_compose_domains: [{ name: 'web', domain: 'https://web.compose.example.test' }] })).status).toBe(409);
  });

  it('PATCH of the build steps and build pack: stored for the next deploy, checked as on create; a refused PATCH changes nothing', async () => {
    const nix = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, ports_exposes: '3000', build_pack: 'nixpacks', install_command: 'npm ci', build_command: 'npm run build' });
    expect(nix.status, nix.text).toBe(201);
    const uuid = nix.json.uuid as string;
    const patch = (body: Record<string, unknown>) => c.api('PATCH', `/applications/${uuid}`, c.write, body);
    const get = async () => (await c.api('GET', `/applications/${uuid}`, c.read)).json;
    expect((await patch({ build_command: 'npm run build:prod', start_command: 'node dist/server.js', install_command: '' })).status).toBe(200);
    expect(await get()).toMatchObject({ install_command: null, build_command: 'npm run build:prod', start_command: 'node dist/server.js', base_directory: '/' });
    expect((await patch({ base_directory: '/web', start_command: null })).status).toBe(200);
    expect(await get()).toMatchObject({ build_command: 'npm run build:prod', start_command: null, base_directory: '/web' });
    // The same refusals, in the same words, as on create.
    const before = await dump(c.s);
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ build_command: 'npm run build\nUSER root' }, 'build_command'],
      [{ build_pack: 'static' }, 'ports_exposes'],
      [{ build_pack: 'static', ports_exposes: '80', start_command: 'nginx' }, 'start_command'],
      [{ build_pack: 'dockerfile', install_command: 'npm ci' }, 'install_command'],
      [{ docker_compose_location: '/compose.yaml' }, 'docker_compose_location'],
      [{ docker_compose_domains: [{ name: 'web', domain: 'https://a.example.test' }] }, 'docker_compose_domains'],
      [{ build_pack: 'dockercompose' }, 'build_pack'],
      [{ publish_directory: '/../x' }, 'publish_directory'],
    ];
    const answers: Record<string, string[]>[] = [];
    for (const [body, field] of refusals) {
      const r = await patch(body);
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(422);
      expect(Object.keys(r.json.errors)).toContain(field);
      answers.push(r.json.errors);
    }
    expect(await dump(c.s)).toEqual(before);
    for (const [i, [body, field]] of refusals.entries()) {
      const created = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, ports_exposes: '3000', build_pack: 'nixpacks', ...body });
      if (created.status === 422 && created.json.errors[field]) expect(created.json.errors[field]).toEqual(answers[i]![field]);
    }
    // Another pack: the steps follow to static (served on 80), and are dropped on dockerfile unless sent again.
    expect((await patch({ build_pack: 'static', ports_exposes: '80', publish_directory: '/dist' })).status).toBe(200);
    expect(await get()).toMatchObject({ build_pack: 'static', ports_exposes: '80', build_command: 'npm run build:prod', publish_directory: '/dist' });
    expect((await patch({ build_pack: 'dockerfile', dockerfile_location: '/Dockerfile.prod' })).status).toBe(200);
    expect(await get()).toMatchObject({ build_pack: 'dockerfile', build_command: null, publish_directory: null, dockerfile_location: '/Dockerfile.prod' });
    // An inline-Dockerfile application has no repository to build with steps.
    const inline = await c.api('POST', '/applications/dockerfile', c.write, { ...place(), dockerfile: Buffer.from('FROM busybox\n').toString('base64') });
    expect((await c.api('PATCH', `/applications/${inline.json.uuid}`, c.write, { build_command: 'make' })).json.errors.build_command[0]).toContain('inline Dockerfile');
  });

  it('refuses what is not base64, other build packs, unsafe URLs, branches and paths; nothing is stored', async () => {
    const before = await dump(c.s);
    const bad: Array<[string, Record<string, unknown>, string]> = [
      ['/applications/dockerfile', { dockerfile: 'FROM busybox' }, 'dockerfile'],
      ['/applications/dockerfile', { dockerfile: Buffer.from('FROM busybox\n\u00e9\n', 'utf8').toString('base64') }, 'dockerfile'],
      ['/applications/public', { ...repo, build_pack: 'heroku' }, 'build_pack'],
      ['/applications/public', { ...repo, build_pack: 'dockercompose', docker_compose_location: '/../compose.yaml' }, 'docker_compose_location'],
      ['/applications/public', { ...repo, docker_compose_location: '/compose.yaml' }, 'docker_compose_location'],
      ['/applications/public', { ...repo, build_pack: 'dockercompose', install_command: 'make' }, 'install_command'],
      ['/applications/public', { ...repo, build_pack: 'dockercompose', domains: 'https://a.example.test' }, 'domains'],
      ['/applications/public', { ...repo, build_pack: 'dockercompose', docker_compose_domains: [{ name: 'we b', domain: 'https://a.example.test' }] }, 'docker_compose_domains'],
      ['/applications/public', { ...repo, docker_compose_domains: [{ name: 'web', domain: 'https://a.example.test' }] }, 'docker_compose_domains'],
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
      expect(Object.keys(r.json.errors).map((k) => k.split('.')[0])).toContain(field);
    }
    const backslash = await c.api('POST', '/applications/public', c.write, { ...place(), ...repo, git_repository: 'http://public.test\\@127.0.0.1:23751/pwn' });
    expect(backslash.json.errors.git_repository[0]).toMatch(/backslash/);
    expect((await c.api('POST', '/applications/public', c.read, { ...place(), ...repo })).status).toBe(403);
    expect(await dump(c.s)).toEqual(before);
  });
});
