// bench/swarm: a 5-replica rolling update to a new image and scaling 1 → 5 on a real one-node
// Docker Swarm (its own dockerd from scripts/dockerd.sh, `swarm-init`, the imported busybox image),
// through a real `berth serve` (dist/bundle/cli.js: `npm run build` first), against the bare
// Engine API (`POST /services/{id}/update` and polling its tasks, what `docker service update`
// does) in the same run. Running tasks are sampled every 250 ms from the engine during each update:
// the lowest count is reported (never below 5 is the point), with the total time and the ratio.
//
//   node bench/swarm/rolling.mjs [rounds=2]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch } from 'undici';
import { startServer } from '../../scripts/lib/start-server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = process.env.BENCH_BERTH_CLI || path.join(ROOT, 'dist', 'bundle', 'cli.js');
const SCRIPT = path.join(ROOT, 'scripts', 'dockerd.sh');
const IMAGE = 'localhost/berth-busybox';
const ROUNDS = Number(process.argv[2] ?? 2);
const log = (...a) => console.error('[bench/swarm]', ...a);

const dir = fs.mkdtempSync('/tmp/berth-bsw-');
const env = { ...process.env, DOCKERD_QUIET: '1', DOCKER_SERVICE_PREFER_OFFLINE_IMAGE: '1' };
const sh = (args) => execFileSync('bash', [SCRIPT, ...args], { encoding: 'utf8', env });
const docker = (args) => sh(['docker', dir, 'd', ...args]);
const socket = path.join(dir, 'd', 'docker.sock');

/** The bare Engine API over the socket. */
function engine(method, p, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: socket, method, path: `/v1.41${p}`, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => (res.statusCode < 300 ? resolve(text ? JSON.parse(text) : undefined) : reject(new Error(`${method} ${p} → ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}
const runningTasks = async (name) =>
  (await engine('GET', `/tasks?filters=${encodeURIComponent(JSON.stringify({ service: [name], 'desired-state': ['running'] }))}`)).filter((t) => t.Status.State === 'running');

/** Samples running tasks every 250 ms until stopped: the lowest count and how many samples. */
function sampler(name) {
  let min = Number.POSITIVE_INFINITY;
  let samples = 0;
  let on = true;
  const done = (async () => {
    while (on) {
      min = Math.min(min, (await runningTasks(name)).length);
      samples++;
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return async () => ((on = false), await done, { min, samples });
}

/** Waits until `n` tasks run `image` and the update (if any) is over. */
async function converged(name, n, image) {
  for (;;) {
    const s = await engine('GET', `/services/${name}`);
    const st = s.UpdateStatus?.State ?? '';
    const run = await runningTasks(name);
    if (st !== 'updating' && run.length === n && run.every((t) => t.Spec.ContainerSpec.Image === image)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const fresh = new Agent({ pipelining: 0 });
async function api(url, token, method, p, body) {
  const r = await fetch(`${url}/api/v1${p}`, {
    dispatcher: fresh,
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const SERVE = `mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www`;
const HEALTH = ['CMD-SHELL', 'wget -q -O- http://127.0.0.1:8080/ >/dev/null || exit 1'];

let serve;
try {
  sh(['up', dir]);
  sh(['swarm-init', dir]);
  for (const t of ['v1', 'v2', 'v3', 'v4', 'v5']) docker(['tag', `${IMAGE}:latest`, `${IMAGE}:${t}`]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bsw-data-'));
  const { token } = JSON.parse(execFileSync(process.execPath, [CLI, 'init', '--json', '--data', dataDir], { encoding: 'utf8' }));
  serve = await startServer({ label: 'berth serve', args: [CLI, 'serve', '--port', '0', '--data', dataDir], env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', API_RATE_LIMIT: '0' } });
  const url = serve.url;
  const { uuid: server } = await api(url, token, 'POST', '/servers', { ip: '127.0.0.1', name: 'swarm', engine_endpoint: `unix://${socket}` });
  const v = await api(url, token, 'POST', `/servers/${server}/validate`);
  if (!v.is_swarm_manager) throw new Error(`not a manager: ${v.validation_logs}`);
  const project = (await api(url, token, 'POST', '/projects', { name: 'bench' })).uuid;
  const deploy = async (uuid) => {
    const d = (await api(url, token, 'POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid;
    for (;;) {
      const r = await api(url, token, 'GET', `/deployments/${d}`);
      if (r.status === 'finished') return;
      if (r.status === 'failed') throw new Error(r.logs);
      await new Promise((res) => setTimeout(res, 100));
    }
  };
  const results = { berth: { roll: [], min: [], scale: [] }, bare: { roll: [], min: [], scale: [] } };
  for (let round = 1; round <= ROUNDS; round++) {
    // berth: an application of 5 replicas, then a new image; another of 1, scaled to 5.
    const r = await api(url, token, 'POST', '/applications/dockerimage', {
      project_uuid: project,
      server_uuid: server,
      environment_name: 'production',
      docker_registry_image_name: IMAGE,
      docker_registry_image_tag: 'v1',
      ports_exposes: '8080',
      custom_docker_run_options: `--entrypoint "sh -c '${SERVE}'"`,
      health_check_enabled: true,
      health_check_interval: 1,
      health_check_start_period: 1,
      swarm_replicas: 5,
    });
    await deploy(r.uuid);
    await api(url, token, 'PATCH', `/applications/${r.uuid}`, { docker_registry_image_tag: 'v2' });
    let stop = sampler(r.uuid);
    let t0 = performance.now();
    await deploy(r.uuid);
    results.berth.roll.push(performance.now() - t0);
    results.berth.min.push((await stop()).min);
    await api(url, token, 'PATCH', `/applications/${r.uuid}`, { swarm_replicas: 1 });
    await deploy(r.uuid);
    await api(url, token, 'PATCH', `/applications/${r.uuid}`, { swarm_replicas: 5 });
    t0 = performance.now();
    await deploy(r.uuid);
    results.berth.scale.push(performance.now() - t0);
    await api(url, token, 'DELETE', `/applications/${r.uuid}?delete_connected_networks=false`);

    // Bare: the same service spec straight to the Engine API, as `docker service update` sends it.
    const name = `bare-${round}`;
    const spec = (image, replicas) => ({
      Name: name,
      TaskTemplate: {
        ContainerSpec: { Image: `${IMAGE}:${image}`, Command: ['sh', '-c', SERVE], Healthcheck: { Test: HEALTH, Interval: 1e9, StartPeriod: 1e9 } },
        RestartPolicy: { Condition: 'any', Delay: 5e9, MaxAttempts: 10, Window: 120e9 },
        Networks: [{ Target: 'berth' }],
      },
      Mode: { Replicated: { Replicas: replicas } },
      UpdateConfig: { Parallelism: 1, Delay: 0, FailureAction: 'rollback', Monitor: 5e9, Order: 'start-first' },
    });
    await engine('POST', '/services/create', spec('v1', 5));
    await converged(name, 5, `${IMAGE}:v1`);
    const update = async (image, replicas) => {
      const s = await engine('GET', `/services/${name}`);
      await engine('POST', `/services/${name}/update?version=${s.Version.Index}`, spec(image, replicas));
      await converged(name, replicas, `${IMAGE}:${image}`);
    };
    stop = sampler(name);
    t0 = performance.now();
    await update('v2', 5);
    results.bare.roll.push(performance.now() - t0);
    results.bare.min.push((await stop()).min);
    await update('v2', 1);
    t0 = performance.now();
    await update('v2', 5);
    results.bare.scale.push(performance.now() - t0);
    await engine('DELETE', `/services/${name}`);
    log(
      `round ${round}: berth roll ${results.berth.roll.at(-1).toFixed(0)} ms (min ${results.berth.min.at(-1)}), bare roll ${results.bare.roll.at(-1).toFixed(0)} ms (min ${results.bare.min.at(-1)})`,
    );
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const row = (k) => `| ${k} | ${med(results.berth[k]).toFixed(0)} ms | ${med(results.bare[k]).toFixed(0)} ms | ${(med(results.berth[k]) / med(results.bare[k])).toFixed(2)} |`;
  console.log('| measure (median) | berth | bare Engine API | berth / bare |\n|---|---|---|---|');
  console.log(row('roll'));
  console.log(row('scale'));
  console.log(`running tasks during the roll, lowest sample: berth ${Math.min(...results.berth.min)}, bare ${Math.min(...results.bare.min)} (of 5)`);
} finally {
  serve?.proc.kill('SIGTERM');
  try {
    sh(['down', dir]);
  } catch {}
}
