/**
 * Coolify fields berth does not apply (src/core/operations/coolify-fields.ts): a value that asks
 * for what berth does anyway passes, any other is a 422 naming the field and saying berth does
 * not support it yet, the same over REST, MCP and remote mode. Real server, real SDK clients.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../src/core/operations/index.js';
import { parseInput } from '../../src/core/validation.js';
import { errorBody, httpClient } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { remoteClient } from '../mcp/remote/helpers.js';

const NOT_YET = 'berth does not support this Coolify field yet: ';

let s: TestServer;
let place: Record<string, string>;
beforeAll(async () => {
  s = await startTestServer();
  const project_uuid = (await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'coolify-fields' } })).json.uuid;
  const server_uuid = (await call(s.url, 'POST', '/api/v1/servers', { token: s.rootToken, body: { name: 'box', ip: '10.0.0.9' } })).json.uuid;
  place = { project_uuid, server_uuid, environment_name: 'production' };
}, 60_000);
afterAll(() => s?.stop());

const api = (method: string, path: string, body: Record<string, unknown>) => call(s.url, method, `/api/v1${path}`, { token: s.rootToken, body });
const repo = { git_repository: 'https://git.example.test/team/app.git', git_branch: 'main', build_pack: 'dockerfile', ports_exposes: '80' };

describe('Coolify fields berth does not apply', () => {
  it("Coolify's create-server body passes when it asks for what berth does; other values are refused by name", async () => {
    const body = { name: 'coolify-body', ip: '10.0.0.10', port: 22, user: 'root', is_build_server: false, instant_validate: false, proxy_type: 'none' };
    expect((await api('POST', '/servers', body)).status).toBe(201);
    const r = await api('POST', '/servers', { ...body, is_build_server: true, instant_validate: true, proxy_type: 'traefik' });
    expect(r.status).toBe(422);
    expect(r.json).toEqual({
      message: 'Validation error.',
      errors: {
        is_build_server: [expect.stringMatching(/^berth does not support this Coolify field yet: berth has no build servers/)],
        instant_validate: [expect.stringContaining('POST /servers/{uuid}/validate')],
        // berth runs Caddy: Coolify's traefik is refused naming what to send instead.
        proxy_type: [expect.stringContaining('proxy_type "caddy"')],
      },
    });
  });

  it('application creates and PATCH: what berth does passes, the rest names the field and what to do instead', async () => {
    const same = {
      is_static: false,
      is_spa: false,
      use_build_server: false,
      is_auto_deploy_enabled: false,
      is_force_https_enabled: false,
      connect_to_docker_network: true,
      health_check_type: 'http',
      git_commit_sha: 'HEAD',
      redirect: 'both',
      install_command: null,
      pre_deployment_command: '',
      autogenerate_domain: false,
    };
    const made = await api('POST', '/applications/public', { ...place, ...repo, ...same });
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    const refused = await api('POST', '/applications/public', {
      ...place,
      ...repo,
      is_static: true,
      watch_paths: 'src/**',
      health_check_type: 'cmd',
      git_commit_sha: 'abc123',
    });
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.json.errors).sort()).toEqual(['git_commit_sha', 'health_check_type', 'is_static', 'watch_paths']);
    // The steps are a git application's own fields, for the generated builds only.
    expect((await api('POST', '/applications/public', { ...place, ...repo, install_command: 'npm ci' })).json.errors).toEqual({
      install_command: ['Applies to build_pack "nixpacks" or "static" (this one is "dockerfile": put the step in the Dockerfile).'],
    });
    expect((await api('POST', '/applications/dockerimage', { ...place, docker_registry_image_name: 'nginx', ports_exposes: '80', install_command: 'npm ci' })).json.errors.install_command[0]).toMatch(
      new RegExp(`^${NOT_YET}the build steps apply to an application built from a git repository`),
    );
    expect(refused.json.errors.watch_paths[0]).toContain('POST /deploy');

    const image = { ...place, docker_registry_image_name: 'nginx', ports_exposes: '80' };
    expect((await api('POST', '/applications/dockerimage', { ...image, use_build_server: true })).json.errors.use_build_server[0]).toMatch(new RegExp(`^${NOT_YET}`));
    const patch = (body: Record<string, unknown>) => api('PATCH', `/applications/${made.json.uuid}`, body);
    expect((await patch({ is_static: false, instant_deploy: false })).status).toBe(200);
    expect((await patch({ is_static: true })).json.errors).toEqual({ is_static: [expect.stringMatching(new RegExp(`^${NOT_YET}a static site is build_pack "static"`))] });
  });

  it("PATCH of a git application takes Coolify's git fields, checked as on create; an image application refuses them by name", async () => {
    const made = await api('POST', '/applications/public', { ...place, ...repo });
    expect(made.status).toBe(201);
    const uuid = made.json.uuid as string;
    const patch = (body: Record<string, unknown>) => api('PATCH', `/applications/${uuid}`, body);
    const ok = await patch({
      git_repository: 'https://git.example.test/team/other.git',
      git_branch: 'release/2.0',
      base_directory: '/app',
      dockerfile_location: '/docker/Dockerfile.prod',
      build_pack: 'dockerfile',
      git_commit_sha: 'HEAD',
    });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect((await call(s.url, 'GET', `/api/v1/applications/${uuid}`, { token: s.rootToken })).json).toMatchObject({
      git_repository: 'https://git.example.test/team/other.git',
      git_branch: 'release/2.0',
      base_directory: '/app',
      dockerfile_location: '/docker/Dockerfile.prod',
      build_pack: 'dockerfile',
    });
    // Validated as on create: the same messages.
    const bad = await patch({ git_repository: 'https://user:pw@git.example.test/x.git', git_branch: '-x', base_directory: '/../etc' });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.json.errors).sort()).toEqual(['base_directory', 'git_branch', 'git_repository']);
    const created = await api('POST', '/applications/public', { ...place, ...repo, git_branch: '-x', base_directory: '/../etc' });
    expect(created.json.errors.git_branch).toEqual(bad.json.errors.git_branch);
    expect(created.json.errors.base_directory).toEqual(bad.json.errors.base_directory);
    // The build pack changes among the single-image packs (taking effect at the next deploy), never to an image or to/from compose.
    expect((await patch({ build_pack: 'dockerimage' })).json.errors.build_pack[0]).toContain('dockerimage is create_application');
    expect((await patch({ build_pack: 'dockercompose' })).json.errors.build_pack[0]).toContain('cannot turn a "dockerfile" application into a "dockercompose" one');
    // What berth cannot apply stays refused by name.
    expect((await patch({ git_commit_sha: 'abc123' })).json.errors.git_commit_sha[0]).toMatch(new RegExp(`^${NOT_YET}`));
    // Nothing of a refused PATCH landed.
    expect((await call(s.url, 'GET', `/api/v1/applications/${uuid}`, { token: s.rootToken })).json.git_branch).toBe('release/2.0');

    const image = await api('POST', '/applications/dockerimage', { ...place, docker_registry_image_name: 'nginx', ports_exposes: '80' });
    const onImage = await api('PATCH', `/applications/${image.json.uuid}`, { git_branch: 'main', build_pack: 'dockerimage' });
    expect(onImage.status).toBe(422);
    expect(onImage.json.errors).toEqual({ git_branch: ['This application runs an image, not a git repository: create a git application for that.'] });
    expect((await api('PATCH', `/applications/${image.json.uuid}`, { build_pack: 'nixpacks' })).json.errors.build_pack[0]).toContain("cannot change this application's build pack");
  });

  it("databases: each kind's configuration fields name the field, with the env or file storage to use instead", async () => {
    const pg = await api('POST', '/databases/postgresql', { ...place, postgres_initdb_args: '--data-checksums', postgres_host_auth_method: 'scram-sha-256', postgres_conf: 'max_connections = 50' });
    expect(pg.status).toBe(422);
    expect(pg.json.errors).toEqual({
      postgres_initdb_args: [expect.stringContaining('POSTGRES_INITDB_ARGS with POST /databases/{uuid}/envs')],
      postgres_host_auth_method: [expect.stringContaining('POSTGRES_HOST_AUTH_METHOD')],
      postgres_conf: [`${NOT_YET}berth cannot install a postgresql.conf yet.`],
    });
    expect((await api('POST', '/databases/mysql', { ...place, mysql_conf: '[mysqld]\n' })).json.errors.mysql_conf[0]).toContain('/etc/mysql/conf.d/custom.cnf');
    expect((await api('POST', '/databases/redis', { ...place, redis_conf: 'maxmemory 1mb' })).json.errors.redis_conf[0]).toMatch(new RegExp(`^${NOT_YET}`));
    expect((await api('POST', '/databases/postgresql', { ...place, postgres_conf: null, postgres_initdb_args: '' })).status).toBe(201);
    // Coolify takes every kind's fields on every create: another kind's null passes, its value is named.
    expect((await api('POST', '/databases/mysql', { ...place, postgres_conf: null, redis_conf: '' })).status).toBe(201);
    expect(Object.keys((await api('POST', '/databases/mysql', { ...place, postgres_conf: 'max_connections = 5' })).json.errors)).toEqual(['postgres_conf']);
  });

  it('every declared field is refused by name for a value it does not accept, and none is also a field the operation applies', () => {
    for (const op of operations.filter((o) => o.unsupported)) {
      const table = op.unsupported!;
      const shape = Object.keys(op.input.shape);
      expect(
        shape.filter((k) => k in table),
        op.name,
      ).toEqual([]);
      // A number no entry accepts: every field of the table answers its own message.
      let errors: Record<string, string[]> = {};
      try {
        parseInput(op, Object.fromEntries(Object.keys(table).map((k) => [k, 987654])));
      } catch (err) {
        errors = (err as { details: { errors: Record<string, string[]> } }).details.errors;
      }
      for (const k of Object.keys(table)) expect(errors[k], `${op.name} ${k}`).toEqual([expect.stringMatching(new RegExp(`^${NOT_YET}.+\\.$`))]);
    }
  });

  it('the OpenAPI document lists them per operation: the values accepted, and why any other is refused', async () => {
    const doc = (await call(s.url, 'GET', '/api/v1/openapi.json')).json;
    expect(doc.paths['/api/v1/servers'].post['x-berth-coolify-fields'].is_build_server).toEqual({ accepts: [false], refused: expect.stringContaining('no build servers') });
    expect(doc.paths['/api/v1/databases/postgresql'].post['x-berth-coolify-fields'].postgres_conf).toEqual({ accepts: [null, ''], refused: 'berth cannot install a postgresql.conf yet' });
  });

  it('MCP over HTTP and remote mode answer the same: accepted values run, others name the field', async () => {
    const clients = [await httpClient('v2-modern', s.url, s.rootToken), await remoteClient('v2-modern', s.url, s.rootToken)];
    try {
      for (const c of clients) {
        const ok = await c.callTool('create_server', { name: 'via-mcp', ip: '10.0.0.11', is_build_server: false, proxy_type: 'none' });
        expect(ok.isError, JSON.stringify(ok.content)).toBeFalsy();
        expect(errorBody(await c.callTool('create_server', { name: 'via-mcp', ip: '10.0.0.12', is_build_server: true }))).toMatchObject({
          message: 'Validation error.',
          errors: { is_build_server: [expect.stringMatching(new RegExp(`^${NOT_YET}berth has no build servers`))] },
        });
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
});
