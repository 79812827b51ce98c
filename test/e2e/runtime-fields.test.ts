/**
 * Coolify's runtime fields reach a real engine: what the engine's own inspect says after a deploy.
 * An application with limits, a health check, custom labels and run options (an entrypoint that
 * serves HTTP with busybox, which has wget and no curl) runs with HostConfig.Memory, NanoCpus, ...,
 * Config.Healthcheck and the entrypoint set, and podman itself finds the check passing. A compose
 * service whose command is a string (`sleep 36000`) runs, ordered after what it depends on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, ensureSleeperImage, registerEngines, SLEEPER_IMAGE, until, type Platform } from './support.js';

describe.skipIf(!enginesAvailable)('runtime fields on a real engine', () => {
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

  it('an application: limits in HostConfig, the health check in Config.Healthcheck and passing, the entrypoint from run options, custom labels under berth’s own', async () => {
    const [repo, tag] = SLEEPER_IMAGE.split(':');
    const serve = `mkdir -p /www && echo berth-ok > /www/index.html && exec httpd -f -p 8080 -h /www`;
    const { uuid } = await api.ok('POST', '/applications/dockerimage', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'runtime-fields',
      docker_registry_image_name: repo,
      docker_registry_image_tag: tag,
      ports_exposes: '8080',
      limits_memory: '64m',
      limits_memory_swap: '128m',
      limits_memory_reservation: '32m',
      limits_cpus: '0.5',
      limits_cpuset: '0',
      limits_cpu_shares: 512,
      health_check_enabled: true,
      health_check_path: '/index.html',
      health_check_response_text: 'berth-ok',
      health_check_interval: 2,
      // Room for a loaded machine: the check runs in a container limited to half a CPU.
      health_check_timeout: 8,
      health_check_retries: 6,
      health_check_start_period: 1,
      custom_docker_run_options: `--entrypoint "sh -c '${serve}'" --hostname web-1 --cap-drop NET_RAW --stop-timeout 3 --init --ulimit nofile=512:1024 --ulimit nproc=4096`,
      custom_labels: Buffer.from('team=shop\n').toString('base64'),
    });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);

    const c = await engines.a.inspectContainer(uuid);
    expect(c.State.Running).toBe(true);
    expect(c.HostConfig).toMatchObject({ Memory: 64 * 2 ** 20, MemorySwap: 128 * 2 ** 20, MemoryReservation: 32 * 2 ** 20, NanoCpus: 5e8, CpusetCpus: '0', CpuShares: 512 });
    const hc = c.Config.Healthcheck as { Test: string[]; Interval: number; Timeout: number; Retries: number; StartPeriod: number };
    expect(hc).toMatchObject({ Interval: 2e9, Timeout: 8e9, Retries: 6, StartPeriod: 1e9 });
    expect(hc.Test[0]).toBe('CMD-SHELL');
    expect(hc.Test[1]).toContain('localhost\\:8080/index.html');
    expect(c.Config.Entrypoint).toEqual(['sh', '-c', serve]);
    expect(c.Config.Cmd ?? []).toEqual([]);
    expect(c.Config.Labels).toMatchObject({ team: 'shop', 'berth.resource': uuid, 'berth.managed': 'true' });
    expect(c.Config.Hostname).toBe('web-1');
    // --init: a minimal init (podman's catatonit, installed by scripts/engines.sh) is PID 1.
    expect(c.HostConfig.Init).toBe(true);
    expect(c.HostConfig.CapDrop).toEqual([expect.stringMatching(/^(CAP_)?NET_RAW$/)]);
    // podman names them RLIMIT_*, Docker by their short names. (podman drops its configured
    // defaults when a list is given, so nproc is given too: runc refuses podman's built-in one here.)
    expect(c.HostConfig.Ulimits).toEqual(expect.arrayContaining([{ Name: expect.stringMatching(/^(RLIMIT_NOFILE|nofile)$/), Soft: 512, Hard: 1024 }]));
    // The engine's own run of the check (the image has wget, no curl): passes once httpd is up.
    await until(
      'the health check to pass',
      async () => {
        try {
          engines.podman('a', ['healthcheck', 'run', uuid]);
          return true;
        } catch {
          return undefined;
        }
      },
      20_000,
      300,
    );
    // The same check against text the page does not hold fails: the new container never turns
    // healthy, so the deploy fails and the previous one (with its passing check) keeps serving.
    const id = (await engines.a.inspectContainer(uuid)).Id;
    await api.ok('PATCH', `/applications/${uuid}`, { health_check_response_text: 'not-there' });
    const d = await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}&force=true`)).deployments[0].deployment_uuid, 60_000, 'failed');
    expect(d.logs).toMatch(/is unhealthy: its health check failed/);
    expect((await engines.a.inspectContainer(uuid)).Id).toBe(id);
    engines.podman('a', ['healthcheck', 'run', uuid]);
  }, 120_000);

  it('a compose service: a string command runs split into words, after the service it depends on, with its limits', async () => {
    const yaml = [
      'services:',
      '  worker:',
      `    image: ${SLEEPER_IMAGE}`,
      '    command: sleep 36000',
      '    mem_limit: 48m',
      '    stop_grace_period: 2s',
      '    depends_on:',
      '      base: { condition: service_started }',
      '  base:',
      `    image: ${SLEEPER_IMAGE}`,
      '    entrypoint: sh -c "exec sleep 36001"',
      '    healthcheck: { test: ["CMD", "true"], interval: 5s }',
    ].join('\n');
    const { uuid } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'compose-runtime',
      docker_compose_raw: Buffer.from(yaml).toString('base64'),
    });
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 60_000);
    const worker = await engines.a.inspectContainer(`${uuid}-worker`);
    const base = await engines.a.inspectContainer(`${uuid}-base`);
    expect(worker.State.Running).toBe(true);
    expect(worker.Config.Cmd).toEqual(['sleep', '36000']);
    expect(worker.HostConfig.Memory).toBe(48 * 2 ** 20);
    expect(base.State.Running).toBe(true);
    expect(base.Config.Entrypoint).toEqual(['sh', '-c', 'exec sleep 36001']);
    expect((base.Config.Healthcheck as { Test: string[] }).Test).toEqual(['CMD', 'true']);
    // Dependencies first: the base container was created before the worker.
    expect(Date.parse(base.Created!)).toBeLessThanOrEqual(Date.parse(worker.Created!));
  }, 120_000);
});
