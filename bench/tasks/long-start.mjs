// bench/tasks/long-start: the same long start with and without a task, from the official SDK v1
// client with its default settings (issue 38, "Measure": the client must never time out).
//
//   npm run build && node bench/tasks/long-start.mjs [--ready 70] [--period 90]
//
// - One podman engine (scripts/engines.sh up in a temp dir; engine b comes up too and stays idle).
// - Three applications of the same busybox image, each started the same way: its container
//   serves /index.html only after --ready seconds, its health check (interval 1 s, start period
//   --period s) passes then. Started at the same moment:
//   - bare: `podman run` of the same container on the engine and `podman exec wget` of the page
//     every second until it answers (the work itself, no berth, no MCP);
//   - no task: start_application from a v1 client (default 60 s request timeout) against berth with
//     its default answer bound (BERTH_ANSWER_WITHIN_MS, 25 s): the call answers at the bound with
//     the deployment to follow;
//   - no task, no bound: the same against a second berth whose bound is set past the start
//     (BERTH_ANSWER_WITHIN_MS=600000, how calls behaved before the bound): the client gives up;
//   - task: start_application as a task (client.experimental.tasks.callToolStream) against the
//     first berth: answered with its task at once, then the start's answer at its end.
// - Both berths run in this process (dist/serve.js) on SQLite stores of their own, rate limit off.
// Prints each time, what each call ended with, and each time / bare. Everything is torn down at
// the end, also on failure or Ctrl-C.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { request } from 'undici';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dist = path.join(ROOT, 'dist');
const ENGINES = path.join(ROOT, 'scripts', 'engines.sh');
const { openStore } = await import(path.join(dist, 'store/db.js'));
const admin = await import(path.join(dist, 'core/admin.js'));
const { loadConfig } = await import(path.join(dist, 'config/config.js'));
const { startServer } = await import(path.join(dist, 'serve.js'));

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const READY_S = opt('ready', 70);
const PERIOD_S = opt('period', 90);
const IMAGE = 'localhost/berth-sleeper';
const KEEP_RUNNING = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";
const SERVE = `sleep ${READY_S}; mkdir -p /www && echo berth-ok > /www/index.html && exec httpd -f -p 8080 -h /www`;
const WATCHDOG_MS = 6 * 60_000;

const log = (...a) => console.error(`[bench:long-start ${new Date().toISOString().slice(11, 19)}]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let engDir;
const dirs = [];
const servers = [];
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    await Promise.all(servers.map((s) => s.close().catch(() => undefined)));
    if (engDir) {
      log('engines down');
      try {
        execFileSync('bash', [ENGINES, 'down', engDir], { stdio: 'ignore', timeout: 180_000 });
      } catch (err) {
        log(`engines down failed: ${err.message}`);
      }
    }
    for (const d of [...dirs, engDir]) if (d) fs.rmSync(d, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => cleanup().finally(() => process.exit(130)));
const watchdog = setTimeout(() => {
  log(`gave up after ${WATCHDOG_MS / 60_000} min`);
  cleanup().finally(() => process.exit(1));
}, WATCHDOG_MS);
watchdog.unref();

const podman = (args, timeout = 120_000) => execFileSync('bash', [ENGINES, 'podman', 'a', engDir, ...args], { encoding: 'utf8', timeout });

/** A berth serve in this process on a store of its own, engine a registered, one slow application. */
async function berth(env, name) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-long-'));
  dirs.push(dataDir);
  const db = await openStore(dataDir, null);
  const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
  const config = loadConfig({ LOG_LEVEL: 'silent', API_RATE_LIMIT: '0', BERTH_HELPER_IMAGE: 'localhost/berth-busybox:latest', ...env }, { dataDir, databaseUrl: null, host: '127.0.0.1', port: 0 });
  const server = await startServer(config, () => {});
  servers.push(server);
  const auth = { authorization: `Bearer ${init.token}` };
  const rest = async (method, p, body) => {
    const r = await request(`${server.url}/api/v1${p}`, { method, headers: { ...auth, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
    const json = await r.body.json();
    if (r.statusCode >= 300) throw new Error(`${method} ${p}: ${r.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  const srv = await rest('POST', '/servers', { name: 'engine-a', ip: '127.0.0.1', engine_endpoint: `unix://${engDir}/a/engine.sock` });
  const v = await rest('POST', `/servers/${srv.uuid}/validate`);
  if (!v.is_usable) throw new Error(`engine not usable: ${JSON.stringify(v)}`);
  const dest = await rest('POST', `/servers/${srv.uuid}/destinations`, { network: 'none' });
  const project = await rest('POST', '/projects', { name: 'bench' });
  const app = await rest('POST', '/applications/dockerimage', {
    project_uuid: project.uuid,
    server_uuid: srv.uuid,
    destination_uuid: dest.uuid,
    environment_name: 'production',
    name,
    docker_registry_image_name: IMAGE,
    docker_registry_image_tag: 'latest',
    ports_exposes: '8080',
    health_check_enabled: true,
    health_check_path: '/index.html',
    health_check_interval: 1,
    health_check_timeout: 5,
    health_check_retries: 3,
    health_check_start_period: PERIOD_S,
    custom_docker_run_options: `--entrypoint "sh -c '${SERVE}'" --init --stop-timeout 1`,
  });
  // The SDK v1 client with its default settings (60 s request timeout), the default tool set.
  const client = new Client({ name: 'bench-long-start', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', server.url), { requestInit: { headers: { ...auth, 'x-berth-toolsets': 'all' } } }));
  await client.listTools();
  return { client, app: app.uuid };
}

/** The container alone: started on the engine, its page fetched every second until it answers. */
async function bare() {
  const t0 = performance.now();
  const name = `bare-${Date.now()}`;
  podman(['run', '-d', '--name', name, '--network', 'none', '--init', '--entrypoint', 'sh', `${IMAGE}:latest`, '-c', SERVE]);
  for (;;) {
    await sleep(1_000);
    try {
      execFileSync('bash', [ENGINES, 'podman', 'a', engDir, 'exec', name, 'wget', '-q', '-O', '-', 'http://127.0.0.1:8080/index.html'], { stdio: 'ignore', timeout: 10_000 });
      return { ms: performance.now() - t0, ended: 'page answered' };
    } catch {
      // not yet
    }
  }
}

/** What a plain call ended with: its answer (and the deployment's status in it), or the client's error. */
async function plainCall(b) {
  const t0 = performance.now();
  try {
    const r = await b.client.callTool({ name: 'start_application', arguments: { uuid: b.app } });
    const sc = r.structuredContent ?? {};
    return { ms: performance.now() - t0, ended: `answered: ${sc.message ?? JSON.stringify(sc).slice(0, 80)} (deployment ${sc.deployment_status ?? '?'}${sc.follow ? ', follow' : ''})` };
  } catch (err) {
    return { ms: performance.now() - t0, ended: `client error: ${err.message}` };
  }
}

async function taskCall(b) {
  const t0 = performance.now();
  let createdMs;
  let last;
  for await (const m of b.client.experimental.tasks.callToolStream({ name: 'start_application', arguments: { uuid: b.app } }, CallToolResultSchema, { task: { ttl: 600_000 } })) {
    if (m.type === 'taskCreated') createdMs = performance.now() - t0;
    last = m;
  }
  const sc = last?.result?.structuredContent ?? {};
  const ended = last?.type === 'result' ? `task result: ${sc.message} (deployment ${sc.deployment_status})` : `task ${last?.type}: ${JSON.stringify(last?.error ?? last).slice(0, 120)}`;
  return { ms: performance.now() - t0, ended: `${ended}; task answered in ${createdMs?.toFixed(0)} ms` };
}

try {
  engDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bls-'));
  log(`engines up in ${engDir}`);
  execFileSync('bash', [ENGINES, 'up', engDir], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ENGINES_QUIET: '1' }, timeout: 240_000 });
  try {
    podman(['image', 'exists', `${IMAGE}:latest`]);
  } catch {
    podman([
      'import',
      '--quiet',
      '--change',
      `CMD ["sh","-c",${JSON.stringify(KEEP_RUNNING)}]`,
      '--change',
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      `${engDir}/busybox-rootfs.tar`,
      `${IMAGE}:latest`,
    ]);
  }
  log('berths up');
  const bounded = await berth({}, 'slow-start');
  const tasked = await berth({}, 'slow-start-task');
  const unbounded = await berth({ BERTH_ANSWER_WITHIN_MS: '600000' }, 'slow-start-unbound');
  log(`starting all four at once (ready after ${READY_S} s, start period ${PERIOD_S} s)`);
  const [b, plain, unbound, task] = await Promise.all([bare(), plainCall(bounded), plainCall(unbounded), taskCall(tasked)]);
  const rows = [
    ['bare (the container alone)', b],
    ['no task, answer bound 25 s (default)', plain],
    ['no task, no answer bound', unbound],
    ['task', task],
  ];
  console.log(`\nlong start: page ready after ${READY_S} s, health start period ${PERIOD_S} s; SDK v1 client, default settings (60 s request timeout)\n`);
  console.log('| call | s | / bare | ended with |');
  console.log('| ---- | - | ------ | ---------- |');
  for (const [label, r] of rows) console.log(`| ${label} | ${(r.ms / 1000).toFixed(1)} | ${(r.ms / b.ms).toFixed(2)} | ${r.ended} |`);
} catch (err) {
  log(`failed: ${err.stack ?? err}`);
  process.exitCode = 1;
} finally {
  await cleanup();
  clearTimeout(watchdog);
  process.exit();
}
