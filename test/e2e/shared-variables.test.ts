/**
 * Shared variables reach a real container: an application on a real engine whose own variables
 * reference {{team.X}}, {{environment.Y}} and {{server.Z}} (inside other text too) is deployed
 * once, and the container's Env, read through the Engine API, holds the values of the resource's
 * own team, environment and server — not those of another team that uses the same keys, nor of
 * another environment of the project. An unknown reference stays as written and the deployment
 * log names it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, ensureSleeperImage, SLEEPER_IMAGE } from './support.js';

describe.skipIf(!enginesAvailable)('shared variables resolved at deploy, on a real engine', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("the container's Env holds the resolved values of the resource's own scopes", async () => {
    const { uuid: server } = await api.ok('POST', '/servers', { ip: '127.0.0.1', name: 'engine-a', engine_endpoint: `unix://${engines.socketA}` });
    expect(await api.ok('POST', `/servers/${server}/validate`)).toMatchObject({ is_usable: true });
    const dest = (await api.ok('POST', `/servers/${server}/destinations`, { network: 'none' })).uuid;
    const project = (await api.ok('POST', '/projects', { name: `shared ${Date.now()}` })).uuid;
    await api.ok('POST', `/projects/${project}/environments`, { name: 'staging' });

    await api.ok('POST', '/team/envs', { key: 'GREETING', value: 'hello from the team' });
    await api.ok('POST', `/projects/${project}/environments/production/envs`, { key: 'DB_HOST', value: 'db.production.internal' });
    await api.ok('POST', `/projects/${project}/environments/staging/envs`, { key: 'DB_HOST', value: 'db.staging.internal' });
    await api.ok('POST', `/projects/${project}/envs`, { key: 'REGION', value: 'eu-1' });
    await api.ok('POST', `/servers/${server}/envs`, { key: 'ZONE', value: 'rack-7' });
    // Another team with the same key: never seen by this team's resource.
    const other = await s.team('Other shared');
    expect((await new Api(s.url, other.rootToken).req('POST', '/team/envs', { key: 'GREETING', value: 'not yours' })).status).toBe(201);

    const [repo, tag] = SLEEPER_IMAGE.split(':');
    const { uuid } = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: project,
      server_uuid: server,
      destination_uuid: dest,
      environment_name: 'production',
      name: 'uses-shared',
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
    });
    await api.ok('PATCH', `/applications/${uuid}/envs/bulk`, {
      data: [
        { key: 'GREETING', value: '{{team.GREETING}}' },
        { key: 'DATABASE_URL', value: 'postgres://app@{{ environment.DB_HOST }}:5432/app?region={{project.REGION}}' },
        { key: 'WHERE', value: '{{server.ZONE}}' },
        { key: 'MISSING', value: '{{team.NO_SUCH_KEY}}' },
        { key: 'TEMPLATE', value: '{{ not.a.scope }} stays' },
      ],
    });

    const d = await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid);
    const env = (await engines.a.inspectContainer(uuid)).Config.Env as string[];
    expect(env).toEqual(
      expect.arrayContaining([
        'GREETING=hello from the team',
        'DATABASE_URL=postgres://app@db.production.internal:5432/app?region=eu-1',
        'WHERE=rack-7',
        'MISSING={{team.NO_SUCH_KEY}}',
        'TEMPLATE={{ not.a.scope }} stays',
      ]),
    );
    expect(env.join('\n')).not.toContain('not yours');
    expect(env.join('\n')).not.toContain('staging');
    expect(d.logs).toContain('MISSING: {{team.NO_SUCH_KEY}} is not a shared variable of this team; left as written');
    // The resource's own records keep the references, not the values.
    const own = (await api.ok('GET', `/applications/${uuid}/envs`)) as Array<{ key: string; value: string }>;
    expect(own.find((e) => e.key === 'GREETING')!.value).toBe('{{team.GREETING}}');
  }, 90_000);
});
