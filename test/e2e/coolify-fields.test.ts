/**
 * Coolify's fields on real engines: a file storage is written into the container (a file with
 * its content, a directory) and goes with the application when it migrates; service logs pick
 * one container by sub_service_name and carry timestamps only when show_timestamps asks; a
 * service's restart with latest=true pulls its images first (none can be pulled here: the
 * restart fails and leaves the containers running as they were).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, ensureSleeperImage, migrationEnded, registerEngines, SLEEPER_IMAGE, until, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)("Coolify's fields on a real engine", () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;

  beforeAll(async () => {
    ensureSleeperImage(engines);
    s = await startTestServer({ apiRateLimit: 0 });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  const cat = (engine: 'a' | 'b', container: string, path: string) => engines.podman(engine, ['exec', container, 'cat', path]);

  it('file storages are in the container after a deploy, follow a content change, and go with a migration', async () => {
    const [repo, tag] = SLEEPER_IMAGE.split(':');
    const { uuid } = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'files',
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
    });
    const file = await api.ok('POST', `/applications/${uuid}/storages`, { type: 'file', mount_path: '/etc/berth/app.conf', content: 'mode=one\nline two\n' });
    await api.ok('POST', `/applications/${uuid}/storages`, { type: 'file', mount_path: '/srv/cache/empty', is_directory: true });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);
    expect(cat('a', uuid, '/etc/berth/app.conf')).toBe('mode=one\nline two\n');
    expect(engines.podman('a', ['exec', uuid, 'sh', '-c', 'test -d /srv/cache/empty && ls -A /srv/cache/empty | wc -l']).trim()).toBe('0');

    await api.ok('PATCH', `/applications/${uuid}/storages`, { uuid: file.uuid, type: 'file', content: 'mode=two\n' });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);
    expect(cat('a', uuid, '/etc/berth/app.conf')).toBe('mode=two\n');

    // The content lives in berth's store: on the destination it is written into the new container.
    const m = await api.ok('POST', `/applications/${uuid}/migrate`, { destination_uuid: p.destB, start_on_destination: true });
    const done = await migrationEnded(api, m.migration_uuid, 90_000);
    expect(done.status, JSON.stringify(done)).toBe('finished');
    await until('the application to run on b', async () => ((await api.ok('GET', `/applications/${uuid}`)).status.startsWith('running') ? true : undefined), 30_000);
    expect(cat('b', uuid, '/etc/berth/app.conf')).toBe('mode=two\n');
    expect(engines.podman('b', ['exec', uuid, 'sh', '-c', 'test -d /srv/cache/empty && echo dir']).trim()).toBe('dir');
  }, 180_000);

  it('service logs: sub_service_name picks one container; show_timestamps adds the engine’s timestamps; restart latest pulls first', async () => {
    const compose = [
      'services:',
      '  web:',
      `    image: ${SLEEPER_IMAGE}`,
      `    command: ["sh", "-c", "echo hello-from-web; trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]`,
      '  worker:',
      `    image: ${SLEEPER_IMAGE}`,
      `    command: ["sh", "-c", "echo hello-from-worker; trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]`,
      '',
    ].join('\n');
    const { uuid } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      docker_compose_raw: Buffer.from(compose).toString('base64'),
    });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);

    const all = await until(
      'both containers to log',
      async () => {
        const r = (await api.ok('GET', `/services/${uuid}/logs`)).logs as string;
        return r.includes('hello-from-web') && r.includes('hello-from-worker') ? r : undefined;
      },
      20_000,
    );
    expect(all).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
    const web = (await api.ok('GET', `/services/${uuid}/logs?sub_service_name=web`)).logs as string;
    expect(web).toContain('hello-from-web');
    expect(web).not.toContain('hello-from-worker');
    const stamped = (await api.ok('GET', `/services/${uuid}/logs?sub_service_name=web&show_timestamps=true`)).logs as string;
    expect(stamped).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) hello-from-web$/m);

    const before = engines.podman('a', ['inspect', '-f', '{{.Id}}', `${uuid}-web`]).trim();
    const r = await api.ok('POST', `/services/${uuid}/restart?latest=true`);
    const d = await deployed(api, r.deployment_uuid, 60_000, 'failed');
    expect(d.logs).toContain(`pulling ${SLEEPER_IMAGE}`);
    // Nothing was stopped before the pull: the same containers still run.
    expect(engines.podman('a', ['inspect', '-f', '{{.Id}} {{.State.Running}}', `${uuid}-web`]).trim()).toBe(`${before} true`);
  }, 120_000);

  it("connect_to_docker_network: false gives a service a network of its own; true puts it back on the destination's; delete removes its own", async () => {
    const compose = ['services:', '  web:', `    image: ${SLEEPER_IMAGE}`, `    command: ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]`, ''].join('\n');
    const { uuid } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      docker_compose_raw: Buffer.from(compose).toString('base64'),
    });
    const networks = () =>
      engines
        .podman('a', ['inspect', '-f', '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}', `${uuid}-web`])
        .trim()
        .split(' ');
    const deploy = async () => deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);
    await deploy();
    const destination = networks();
    expect(destination).not.toContain(uuid);

    expect((await api.ok('PATCH', `/services/${uuid}`, { connect_to_docker_network: false })).uuid).toBe(uuid);
    expect((await api.ok('GET', `/services/${uuid}`)).connect_to_docker_network).toBe(false);
    await deploy();
    expect(networks()).toEqual([uuid]);
    expect(engines.podman('a', ['network', 'inspect', '-f', '{{index .Labels "berth.resource"}}', uuid]).trim()).toBe(uuid);

    await api.ok('PATCH', `/services/${uuid}`, { connect_to_docker_network: true });
    await deploy();
    expect(networks()).toEqual(destination);
    await api.ok('DELETE', `/services/${uuid}`);
    await until('the service gone', async () => ((await api.req('GET', `/services/${uuid}`)).status === 404 ? true : undefined), 30_000);
    expect(engines.podman('a', ['network', 'ls', '--format', '{{.Name}}']).split('\n')).not.toContain(uuid);
  }, 120_000);
});
