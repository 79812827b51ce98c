// bench/soak: mixed REST and MCP load for a set time against three `berth serve` instances that
// share one PostgreSQL (scripts/postgres.sh) and one Redis, behind a client-side round robin.
// During the run one instance is killed (SIGKILL) and restarted, PostgreSQL is stopped and
// started, Redis is stopped and started (without persistence: its keys are gone), and Redis is
// frozen (SIGSTOP) and thawed. Every --sample seconds each instance's RSS, live heap
// (after a GC), open descriptors and event-loop delay are sampled (bench/soak/probe.mjs is
// preloaded into each instance), with the p99 latency the clients saw in that window. Afterwards
// the clients' ledger is checked against the API (bench/soak/workload.mjs).
//
// Exit 1 when a bound is exceeded or the ledger finds a difference:
//   per instance, last sample against the first one after --warmup seconds of its life:
//     RSS ≤ 1.5×, live heap ≤ 1.5×, open descriptors ≤ +20;
//   the last window has no 503, 500 or unanswered request (every outage recovered by itself);
//   every acknowledged write holds, every 503 wrote nothing.
// Event-loop delay and p99 latency are printed and compared, not bounded (the machine is shared).
//
// Usage: npm run bench:soak -- [--duration 300] [--clients 12] [--apps 6] [--sample 30]
//          [--warmup 60] [--outage 10] [--think 0] [--json FILE] [--cli OTHER/dist/bundle/cli.js]
//   (SOAK_DURATION=3600 for a release check; a few minutes in CI.)
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { startServer } from '../../scripts/lib/start-server.mjs';
import { Cluster } from './cluster.mjs';
import { Ledger, Workload } from './workload.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PG_SCRIPT = path.join(ROOT, 'scripts', 'postgres.sh');
const PROBE = pathToFileURL(path.join(import.meta.dirname, 'probe.mjs')).href;

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const DURATION_S = Number(opt('duration', process.env.SOAK_DURATION ?? 300));
const CLIENTS = Number(opt('clients', 12));
const APPS = Number(opt('apps', 6));
const SAMPLE_S = Number(opt('sample', 30));
const WARMUP_S = Number(opt('warmup', 60));
const OUTAGE_S = Number(opt('outage', 10));
const THINK_MS = Number(opt('think', 0));
const JSON_OUT = opt('json', undefined);
/** The berth to soak: this tree's build, or another one (e.g. a branch's dist/bundle/cli.js). */
const CLI = path.resolve(opt('cli', path.join(ROOT, 'dist', 'bundle', 'cli.js')));
const BOUND = { rss: 1.5, heap: 1.5, fds: 20 };

const log = (...a) => console.error(`[soak ${((Date.now() - (globalThis.t0 ?? Date.now())) / 1000).toFixed(0).padStart(4)} s]`, ...a);
const quantile = (xs, q) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] : NaN);
const mb = (b) => (b / 2 ** 20).toFixed(1);

if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: npm run build first (npm run bench:soak does)`);

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// ---- PostgreSQL and Redis ------------------------------------------------------------------------

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-soak-'));
const pgDir = path.join(work, 'pg');
const pgUrl = execFileSync('bash', [PG_SCRIPT, 'up', pgDir, String(await freePort())], { encoding: 'utf8' })
  .trim()
  .split('\n')
  .pop();

const redisPort = await freePort();
const redisUrl = `redis://127.0.0.1:${redisPort}`;
let redis;
const instances = [];
async function startRedis() {
  redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (
      await new Promise((res) =>
        net
          .connect(redisPort, '127.0.0.1')
          .once('connect', function () {
            this.destroy();
            res(true);
          })
          .once('error', () => res(false)),
      )
    )
      return;
    await sleep(50);
  }
  throw new Error('redis-server did not start');
}
const stopRedis = () => new Promise((res) => (redis.exitCode !== null || redis.signalCode !== null ? res() : (redis.once('exit', res), redis.kill('SIGKILL'))));
await startRedis();
// Whatever happens, the bench leaves no database server or Redis behind.
let cleaned = false;
function cleanUp() {
  if (cleaned) return;
  cleaned = true;
  redis?.kill('SIGKILL');
  for (const inst of instances) inst?.proc.kill('SIGKILL');
  try {
    execFileSync('bash', [PG_SCRIPT, 'down', pgDir]);
  } catch {
    // already down
  }
  fs.rmSync(work, { recursive: true, force: true });
}
process.on('exit', cleanUp);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

// ---- three berth instances -------------------------------------------------------------------------

const dataDir = path.join(work, 'data');
fs.mkdirSync(dataDir);
const probeDir = path.join(work, 'probe');
fs.mkdirSync(probeDir);
const baseEnv = { ...process.env, DATABASE_URL: pgUrl, REDIS_URL: redisUrl, API_RATE_LIMIT: '1000000000', LOG_LEVEL: 'warn', HOST: '127.0.0.1', BERTH_SOAK_PROBE_DIR: probeDir };
const init = JSON.parse(execFileSync(process.execPath, [CLI, 'init', '--json', '--data', dataDir], { encoding: 'utf8', env: baseEnv }));
const ports = [await freePort(), await freePort(), await freePort()];
async function startInstance(i) {
  const s = await startServer({
    label: `berth ${i}`,
    args: ['--expose-gc', '--import', PROBE, CLI, 'serve', '--port', String(ports[i]), '--data', dataDir],
    env: baseEnv,
    ready: /berth: listening on (http:\/\/\S+)/,
    cwd: ROOT,
    timeoutMs: 60_000,
  });
  instances[i] = { ...s, startedAt: Date.now(), samples: [], generation: (instances[i]?.generation ?? -1) + 1, logs: s.output };
}
await Promise.all([0, 1, 2].map(startInstance));
/** Starts an instance again, as a supervisor would: retried while it cannot start. */
async function restartInstance(i) {
  for (let tries = 1; ; tries++) {
    try {
      return await startInstance(i);
    } catch (err) {
      if (tries >= 30) throw err;
      event(`instance ${i} did not start (${err.message.split('\n')[1] ?? err.message}); again in 1 s`);
      await sleep(1000);
    }
  }
}
const cluster = new Cluster({ urls: ports.map((p) => `http://127.0.0.1:${p}`), token: init.token });

// ---- the shared resources: a record-only server, a project, APPS applications -----------------------

async function ok(method, p, body) {
  const r = await cluster.rest(method, p, body, 'setup');
  if (r.outcome !== 'ok') throw new Error(`${method} ${p} → ${r.status} ${JSON.stringify(r.json) ?? r.error}`);
  return r.json;
}
const server = await ok('POST', '/api/v1/servers', { name: 'soak-server', ip: '10.0.0.1' });
const project = await ok('POST', '/api/v1/projects', { name: 'soak-base' });
const apps = [];
for (let i = 0; i < APPS; i++) {
  const a = await ok('POST', '/api/v1/applications/dockerimage', {
    project_uuid: project.uuid,
    server_uuid: server.uuid,
    environment_name: 'production',
    docker_registry_image_name: 'nginx',
    docker_registry_image_tag: '1.27',
    ports_exposes: '80',
    name: `soak-app-${i}`,
  });
  apps.push(a.uuid);
}

// ---- sampling ---------------------------------------------------------------------------------------

function procFacts(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024, fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}
async function probe(pid) {
  const file = path.join(probeDir, `probe-${pid}.json`);
  const asked = Date.now();
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    await sleep(20);
    try {
      const p = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (p.at >= asked) return p;
    } catch {
      // not written yet
    }
  }
  return null;
}
const rows = [];
const windowsSeen = [];
async function sample() {
  const t = Math.round((Date.now() - globalThis.t0) / 1000);
  const windows = cluster.takeWindows();
  windowsSeen.push({ t, errors: windows.reduce((n, w) => n + w.errors, 0), requests: windows.reduce((n, w) => n + w.lat.length, 0) });
  for (const [i, inst] of instances.entries()) {
    const w = windows[i];
    const alive = inst.proc.exitCode === null && inst.proc.signalCode === null;
    const row = { t, i, gen: inst.generation, age: Math.round((Date.now() - inst.startedAt) / 1000), requests: w.lat.length, errors: w.errors, p99: quantile(w.lat, 0.99) };
    if (alive) {
      try {
        const [facts, p] = [procFacts(inst.pid), await probe(inst.pid)];
        Object.assign(row, facts, { heap: p?.heapUsed ?? NaN, eldP99: p?.eld.p99 ?? NaN, eldMax: p?.eld.max ?? NaN });
        inst.samples.push(row);
      } catch (err) {
        row.note = `sample failed: ${err.message}`;
      }
    } else row.note = 'down';
    rows.push(row);
    log(
      `sample t=${t}s inst ${i}.${row.gen}: rss ${row.rss ? mb(row.rss) : '-'} MB, heap ${row.heap ? mb(row.heap) : '-'} MB, fds ${row.fds ?? '-'}, eld p99 ${row.eldP99 ?? '-'} ms, ${row.requests} req, p99 ${Number.isFinite(row.p99) ? row.p99.toFixed(1) : '-'} ms, errors ${row.errors}`,
    );
  }
}

// ---- the outages ----------------------------------------------------------------------------------

const events = [];
const event = (what) => {
  events.push({ t: Math.round((Date.now() - globalThis.t0) / 1000), what });
  log(what);
};
/** /api/ready of every live instance: status and how long it took. */
async function ready() {
  return Promise.all(
    instances.map(async (_inst, i) => {
      const t = performance.now();
      try {
        const r = await fetch(`http://127.0.0.1:${ports[i]}/api/ready`, { signal: AbortSignal.timeout(10_000) });
        await r.text();
        return { i, status: r.status, ms: performance.now() - t };
      } catch (err) {
        return { i, status: 0, ms: performance.now() - t, error: err.name };
      }
    }),
  );
}
const readyText = (rs) => rs.map((r) => `${r.i}: ${r.status || r.error} in ${r.ms.toFixed(0)} ms`).join(', ');
/** Polls /api/ready until every instance says READY; the seconds it took. */
async function untilReady(since) {
  for (;;) {
    const rs = await ready();
    if (rs.every((r) => r.status === 200)) return (Date.now() - since) / 1000;
    await sleep(100);
  }
}
const outages = [];
async function outage(name, stop, start) {
  const o = { name };
  event(`${name}: stop`);
  o.from = Date.now();
  await stop();
  await sleep((OUTAGE_S * 1000) / 2);
  o.readyDuring = await ready();
  event(`${name}: /api/ready during the outage: ${readyText(o.readyDuring)}`);
  await sleep((OUTAGE_S * 1000) / 2);
  await start();
  o.to = Date.now();
  o.readyAfterS = await untilReady(o.to);
  event(`${name}: started again; every instance READY after ${o.readyAfterS.toFixed(1)} s`);
  outages.push(o);
}
const chaos = [
  [
    0.25,
    () =>
      outage(
        'instance 2 killed (SIGKILL)',
        async () => instances[2].proc.kill('SIGKILL'),
        () => restartInstance(2),
      ),
  ],
  [
    0.45,
    () =>
      outage(
        'PostgreSQL',
        async () => execFileSync('bash', [PG_SCRIPT, 'stop', pgDir]),
        async () => execFileSync('bash', [PG_SCRIPT, 'start', pgDir]),
      ),
  ],
  [0.65, () => outage('Redis', stopRedis, startRedis)],
  // Connected but not answering (issue 40): 503 within BERTH_REDIS_TIMEOUT_MS, not 500s.
  [
    0.8,
    () =>
      outage(
        'Redis frozen (SIGSTOP)',
        async () => redis.kill('SIGSTOP'),
        async () => redis.kill('SIGCONT'),
      ),
  ],
];

// ---- the run ----------------------------------------------------------------------------------------

const ledger = new Ledger();
const workload = new Workload({ cluster, ledger, apps, clients: CLIENTS, think: THINK_MS, log });
globalThis.t0 = Date.now();
log(`${CLIENTS} clients (half MCP v2 modern, half v1 legacy for their MCP calls), ${APPS} applications, ${DURATION_S} s, sample every ${SAMPLE_S} s, load average ${os.loadavg()[0].toFixed(2)}`);
await workload.start();
// One outage at a time: each starts at its share of the run, or once the one before has ended.
let chaosEnded = Infinity;
const chaosDone = (async () => {
  for (const [at, f] of chaos) {
    const wait = globalThis.t0 + at * DURATION_S * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
    await f();
  }
  chaosEnded = Date.now();
})();
// Samples on a fixed grid until the duration is over and a whole window has passed since the last
// outage ended (a slow restart on a loaded machine lengthens the run rather than the bound's window).
for (let k = 1; ; k++) {
  const wait = globalThis.t0 + k * SAMPLE_S * 1000 - Date.now();
  if (wait > 0) await sleep(wait);
  await sample();
  if (Date.now() - globalThis.t0 >= DURATION_S * 1000 - 1000 && Date.now() - chaosEnded >= SAMPLE_S * 1000) break;
}
await chaosDone;
const loadEnd = Date.now();
await workload.stop();
log(`load stopped; checking the ledger`);
const verified = await workload.verify();

// ---- figures ---------------------------------------------------------------------------------------

const elapsedS = (loadEnd - globalThis.t0) / 1000;
const sum = (pred) =>
  Object.entries(cluster.counts)
    .filter(([k]) => pred(k))
    .reduce((n, [, v]) => n + v, 0);
const total = sum((k) => !k.includes(' setup ') && !k.includes(' check '));
console.log(
  `\nsoak: ${elapsedS.toFixed(0)} s, ${CLIENTS} clients, 3 instances on PostgreSQL + Redis, load average at end ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
console.log(`requests: ${total} (${(total / elapsedS).toFixed(0)}/s); by protocol, kind and outcome:`);
for (const [k, v] of Object.entries(cluster.counts).sort()) console.log(`  ${k.padEnd(24)} ${v}`);

console.log(`\nsamples (every ${SAMPLE_S} s; heap = live heap after a GC; eld = event-loop delay p99 in the window; p99 = request latency seen by the clients):`);
console.log(
  `  ${'t s'.padStart(5)} inst ${'age s'.padStart(6)} ${'RSS MB'.padStart(7)} ${'heap MB'.padStart(8)} ${'fds'.padStart(4)} ${'eld p99'.padStart(8)} ${'eld max'.padStart(8)} ${'req'.padStart(6)} ${'p99 ms'.padStart(7)} ${'err'.padStart(5)}`,
);
for (const r of rows) {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  console.log(
    `  ${String(r.t).padStart(5)} ${`${r.i}.${r.gen}`.padStart(4)} ${String(r.age).padStart(6)} ${(r.rss ? mb(r.rss) : '-').padStart(7)} ${(r.heap ? mb(r.heap) : '-').padStart(8)} ${String(r.fds ?? '-').padStart(4)} ${f(r.eldP99).padStart(8)} ${f(r.eldMax).padStart(8)} ${String(r.requests).padStart(6)} ${f(r.p99).padStart(7)} ${String(r.errors).padStart(5)}${r.note ? `  (${r.note})` : ''}`,
  );
}
console.log('\nevents:');
for (const e of events) console.log(`  ${String(e.t).padStart(5)} s  ${e.what}`);
// Each 503 belongs to the last outage that began before it.
for (const [k, o] of outages.entries()) {
  const next = outages[k + 1]?.from ?? Infinity;
  const during = cluster.answers503.filter((a) => a.at >= o.from && a.at < next).map((a) => a.ms);
  console.log(
    `  ${o.name}: 503 answers around it ${during.length}, p50 ${quantile(during, 0.5)?.toFixed(1)} ms, p99 ${quantile(during, 0.99)?.toFixed(1)} ms, max ${Math.max(...during, 0).toFixed(0)} ms; READY again ${o.readyAfterS.toFixed(1)} s after the restart`,
  );
}

// ---- bounds -----------------------------------------------------------------------------------------

const failures = [];
const bounds = [];
for (const [i, inst] of instances.entries()) {
  const ref = inst.samples.find((s) => s.gen === inst.generation && s.age >= WARMUP_S);
  const last = inst.samples.at(-1);
  if (!ref || !last || ref === last) {
    bounds.push(`instance ${i}.${inst.generation}: no sample after ${WARMUP_S} s of warm-up before the last one; not bounded`);
    continue;
  }
  const check = (name, ok, text) => {
    bounds.push(`instance ${i}.${inst.generation} ${name}: ${text} ${ok ? 'ok' : 'EXCEEDED'}`);
    if (!ok) failures.push(`instance ${i} ${name}: ${text}`);
  };
  check('RSS', last.rss <= BOUND.rss * ref.rss, `${mb(ref.rss)} → ${mb(last.rss)} MB (${(last.rss / ref.rss).toFixed(2)}×, bound ${BOUND.rss}×)`);
  check('live heap', last.heap <= BOUND.heap * ref.heap, `${mb(ref.heap)} → ${mb(last.heap)} MB (${(last.heap / ref.heap).toFixed(2)}×, bound ${BOUND.heap}×)`);
  check('descriptors', last.fds <= ref.fds + BOUND.fds, `${ref.fds} → ${last.fds} (${last.fds - ref.fds >= 0 ? '+' : ''}${last.fds - ref.fds}, bound +${BOUND.fds})`);
  bounds.push(`instance ${i}.${inst.generation} event-loop delay p99 ${ref.eldP99} → ${last.eldP99} ms, request p99 ${ref.p99.toFixed(1)} → ${last.p99.toFixed(1)} ms (not bounded: shared machine)`);
}
const lastWindow = windowsSeen.at(-1);
const recovered = lastWindow.errors === 0;
bounds.push(`last window (${lastWindow.requests} requests): ${lastWindow.errors} answered 503/500 or not at all ${recovered ? 'ok' : 'EXCEEDED'}`);
if (!recovered) failures.push(`the last window still had ${lastWindow.errors} failed requests: not recovered`);
console.log('\nbounds:');
for (const b of bounds) console.log(`  ${b}`);

const ackedTotal = Object.values(ledger.acked).reduce((a, b) => a + b, 0);
console.log(`\nledger: ${ackedTotal} acknowledged writes, ${verified.checked} entities read back at the end`);
for (const [k, v] of Object.entries(ledger.acked).sort()) console.log(`  acknowledged ${k.padEnd(16)} ${v}`);
console.log(`  writes without an "ok", read back before the next write on the same entity (or at the end):`);
for (const [k, v] of Object.entries(ledger.checked).sort()) console.log(`    ${k.padEnd(26)} ${v}`);
console.log(`  project creates answered 503/4xx (must not exist): ${ledger.forbiddenProjectNames.size}; with no answer (may exist): ${ledger.maybeProjectNames.size}`);
const byCategory = {};
for (const a of ledger.anomalies) (byCategory[a.category] ??= []).push(a.detail);
for (const [k, v] of Object.entries(ledger.observed)) console.log(`  observed (not a failure): ${k}: ${v}`);
if (!ledger.anomalies.length) console.log('  differences: none');
for (const [cat, details] of Object.entries(byCategory)) {
  console.log(`  DIFFERENCE ${cat}: ${details.length}`);
  for (const d of details.slice(0, 3)) console.log(`      e.g. ${d}`);
  failures.push(`ledger: ${cat}: ${details.length}`);
}
const errorLogs = instances.map((inst) => (inst.logs().match(/"level":50/g) ?? []).length);
console.log(`\nerror-level log lines per instance (current generation): ${errorLogs.join(', ')}`);
// What they said, once each (the issue wants an outage logged once, as a warning).
const said = new Map();
for (const inst of instances) {
  for (const line of inst.logs().split('\n')) {
    if (!line.includes('"level":50') && !line.includes('"level":40')) continue;
    try {
      const j = JSON.parse(line);
      const k = `${j.level === 50 ? 'error' : 'warn'}: ${j.msg}${j.err?.message ? ` (${String(j.err.message).slice(0, 80)})` : ''}`;
      said.set(k, (said.get(k) ?? 0) + 1);
    } catch {
      // not a log line
    }
  }
}
for (const [k, n] of [...said].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${String(n).padStart(5)} × ${k}`);

if (JSON_OUT)
  fs.writeFileSync(
    JSON_OUT,
    JSON.stringify(
      {
        durationS: elapsedS,
        clients: CLIENTS,
        counts: cluster.counts,
        rows,
        events,
        outages,
        bounds,
        acked: ledger.acked,
        checked: ledger.checked,
        observed: ledger.observed,
        anomalies: ledger.anomalies,
        failures,
      },
      null,
      2,
    ),
  );

// ---- clean up ---------------------------------------------------------------------------------------

await cluster.close();
await Promise.all(instances.map((s) => s.stop()));
await stopRedis();
cleanUp();

console.log(failures.length ? `\nFAIL:\n${failures.map((f) => `  ${f}`).join('\n')}` : '\nPASS: every bound held and the ledger matches the API');
process.exit(failures.length ? 1 : 0);
