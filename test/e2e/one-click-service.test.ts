/**
 * A one-click service deployed on a real engine: POST /services {type: "mosquitto"} stores a
 * generated user and password as the service's variables, a deploy runs the template's broker
 * with them (image eclipse-mosquitto:2, built by `engines.sh mosquitto-image` from Debian's
 * packages: no registry), and the password file the entrypoint writes holds that user. A changed
 * password reaches the container at the next deploy.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_IMAGE, ENGINES_SCRIPT, enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, registerEngines, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)('a one-click service on a real engine', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  const made: string[] = [];

  beforeAll(async () => {
    execFileSync('bash', [ENGINES_SCRIPT, 'mosquitto-image', engines.dir], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ENGINES_QUIET: '1' }, timeout: 300_000 });
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 300_000);
  afterAll(async () => {
    for (const uuid of made) await api?.req('DELETE', `/services/${uuid}?delete_volumes=true`);
    await s?.stop();
  }, 120_000);

  const envOf = (container: string): Record<string, string> =>
    Object.fromEntries((JSON.parse(engines.podman('a', ['inspect', container, '--format', '{{json .Config.Env}}'])) as string[]).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));

  it('mosquitto: created from its template with instant_deploy, runs with the generated user and password', async () => {
    const created = await api.req('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      type: 'mosquitto',
      instant_deploy: true,
    });
    expect(created.status, created.text).toBe(201);
    const { uuid, deployment_uuid } = created.json;
    made.push(uuid);
    expect(deployment_uuid).toMatch(/^[a-z0-9]{24}$/);
    await deployed(api, deployment_uuid, 120_000);

    const vars = Object.fromEntries(((await api.ok('GET', `/services/${uuid}/envs`)) as Array<{ key: string; value: string }>).map((e) => [e.key, e.value]));
    expect(vars.SERVICE_USER_MOSQUITTO).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(vars.SERVICE_PASSWORD_MOSQUITTO).toMatch(/^[A-Za-z0-9]{32}$/);

    const container = `${uuid}-mosquitto`;
    expect(engines.podman('a', ['inspect', container, '--format', '{{.State.Status}}']).trim()).toBe('running');
    expect(envOf(container)).toMatchObject({ MQTT_USERNAME: vars.SERVICE_USER_MOSQUITTO, MQTT_PASSWORD: vars.SERVICE_PASSWORD_MOSQUITTO });
    // The entrypoint made the broker's password file from them, and the broker runs on it.
    const pwfile = engines.podman('a', ['exec', container, 'cat', '/mosquitto/config/passwords']);
    expect(pwfile).toMatch(new RegExp(`^${vars.SERVICE_USER_MOSQUITTO}:\\$7\\$`));
    expect(engines.podman('a', ['exec', container, 'sh', '-c', 'ps -o args | grep -c "^mosquitto -c"']).trim()).toBe('1');
    expect((await api.ok('GET', `/services/${uuid}`)).status).toMatch(/^running/);

    // A changed variable reaches the container through the compose file at the next deploy.
    await api.ok('PATCH', `/services/${uuid}/envs`, { key: 'SERVICE_PASSWORD_MOSQUITTO', value: 'changed-by-a-person' });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}&force=true`)).deployments[0].deployment_uuid, 120_000);
    expect(envOf(container).MQTT_PASSWORD).toBe('changed-by-a-person');
  }, 300_000);
});
