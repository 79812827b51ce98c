// bench/subscriptions: what resource subscriptions cost and how fast they deliver (issue 38,
// "Measure"), each part against a bare baseline in the same run:
//
//   one     one `berth serve` (SQLite): a v2 SDK client (versionNegotiation auto) holds
//           `client.listen({ resourceSubscriptions: ['berth://applications/<uuid>'] })`; a REST
//           PATCH renames the application N times, one at a time, spaced. Delivery = from the
//           PATCH's response to the notification's arrival (and from the PATCH's sending).
//           Baseline: the PATCH round trip itself, and a GET of the same application.
//   three   three `berth serve` on one PostgreSQL store with REDIS_URL (scripts/postgres.sh, a
//           redis-server on loopback): the subscriber on instance 1, the PATCHes through
//           instances 2 and 3 (and 1, for the same-instance figure on PostgreSQL).
//   idle    1,000 idle listen streams (raw SSE POSTs, 16 per token: the per-token cap) on one
//           `berth serve` (SQLite): the serve process's RSS and CPU time (/proc) over an idle
//           window (two: the first still collects the opening's garbage), against the same process
//           with no stream open over the same window; then
//           one rename and how long until every stream has it.
//
//   npm run build && node bench/subscriptions/run.mjs [--only one,three,idle] [--n 200]
//        [--gap 20] [--streams 1000] [--idle 60]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Agent, request } from 'undici';
import { cpuMs } from '../../scripts/lib/proc.mjs';
import { startServer } from '../../scripts/lib/start-server.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? dflt : argv[i + 1];
};
const only = new Set(opt('only', 'one,three,idle').split(','));
const N = Number(opt('n', 200));
const GAP_MS = Number(opt('gap', 20));
const STREAMS = Number(opt('streams', 1000));
const IDLE_S = Number(opt('idle', 60));

const root = path.resolve(import.meta.dirname, '../..');
const cli = path.join(root, 'dist/bundle/cli.js');
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const f1 = (x) => x.toFixed(1);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const cleanups = [];

function initStore(dataDir, env = {}) {
  return JSON.parse(execFileSync(process.execPath, [cli, 'init', '--json', '--data', dataDir], { encoding: 'utf8', env: { ...process.env, ...env } })).token;
}
async function serve(dataDir, env = {}) {
  const s = await startServer({ args: [cli, 'serve', '--port', '0', '--data', dataDir], env: { ...process.env, LOG_LEVEL: 'silent', API_RATE_LIMIT: '0', ...env }, label: 'berth serve' });
  cleanups.unshift(() => s.stop());
  return s;
}

async function rest(base, token, method, p, body) {
  const t0 = performance.now();
  const r = await request(`${base}/api/v1${p}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const json = await r.body.json();
  const ms = performance.now() - t0;
  if (r.statusCode >= 300) throw new Error(`${method} ${p}: ${r.statusCode} ${JSON.stringify(json)}`);
  return { json, ms, at: performance.now() };
}

/** A record-only server, a project and one docker-image application; returns the app's uuid. */
async function world(base, token) {
  const srv = (await rest(base, token, 'POST', '/servers', { name: 'record-only', ip: '10.0.0.1' })).json;
  const project = (await rest(base, token, 'POST', '/projects', { name: 'bench' })).json;
  const app = await rest(base, token, 'POST', '/applications/dockerimage', {
    project_uuid: project.uuid,
    server_uuid: srv.uuid,
    environment_name: 'production',
    docker_registry_image_name: 'nginx',
    docker_registry_image_tag: '1.27',
    ports_exposes: '80',
  });
  return app.json.uuid;
}

/**
 * The subscriber on `subBase`; N renames through `writeBases` in turn, each awaited until its
 * notification arrives (5 s at most), with a GET of the same app before each as a second baseline.
 */
async function delivery(subBase, writeBases, token, appUuid, label) {
  const c = new Client({ name: 'bench-subscriptions', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  await c.connect(new StreamableHTTPClientTransport(new URL('/mcp', subBase), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const uri = `berth://applications/${appUuid}`;
  let waiter = null;
  c.setNotificationHandler('notifications/resources/updated', (n) => {
    if (n.params.uri === uri && waiter) waiter(performance.now());
  });
  const sub = await c.listen({ resourceSubscriptions: [uri] });
  const per = writeBases.map(() => ({ patch: [], get: [], afterResponse: [], afterSend: [], early: 0, lost: 0 }));
  const total = N + 10;
  for (let i = 0; i < total; i++) {
    const w = i % writeBases.length;
    const base = writeBases[w];
    const get = await rest(base, token, 'GET', `/applications/${appUuid}`);
    const arrived = new Promise((resolve) => {
      const t = setTimeout(() => resolve(null), 5_000);
      waiter = (at) => {
        clearTimeout(t);
        resolve(at);
      };
    });
    const sentAt = performance.now();
    const patch = await rest(base, token, 'PATCH', `/applications/${appUuid}`, { name: `renamed-${i}` });
    const at = await arrived;
    waiter = null;
    if (i < 10) continue; // warm-up
    const r = per[w];
    r.patch.push(patch.ms);
    r.get.push(get.ms);
    if (at === null) {
      r.lost++;
    } else {
      if (at < patch.at) r.early++;
      r.afterResponse.push(Math.max(0, at - patch.at));
      r.afterSend.push(at - sentAt);
    }
    await sleep(GAP_MS);
  }
  await sub.close();
  await c.close();
  console.log(`\n${label} (load ${load()})`);
  console.log('PATCH through      n   PATCH p50/p95   GET p50/p95   delivery after response p50/p95   from send p50/p95   ratio (after response / PATCH, p50 p95)   early lost');
  for (const [w, r] of per.entries()) {
    const row = [
      writeBases.length === 1 ? 'same instance' : `instance ${w + 1}`,
      String(r.patch.length).padStart(5),
      `${f1(pct(r.patch, 50))} / ${f1(pct(r.patch, 95))}`.padStart(15),
      `${f1(pct(r.get, 50))} / ${f1(pct(r.get, 95))}`.padStart(13),
      `${f1(pct(r.afterResponse, 50))} / ${f1(pct(r.afterResponse, 95))}`.padStart(34),
      `${f1(pct(r.afterSend, 50))} / ${f1(pct(r.afterSend, 95))}`.padStart(19),
      `${(pct(r.afterResponse, 50) / pct(r.patch, 50)).toFixed(2)} ${(pct(r.afterResponse, 95) / pct(r.patch, 95)).toFixed(2)}`.padStart(41),
      `${String(r.early).padStart(5)} ${String(r.lost).padStart(4)}`,
    ];
    console.log(row.join(' '));
  }
  return per;
}

async function partOne() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-subs-'));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const token = initStore(dataDir);
  const s = await serve(dataDir);
  const app = await world(s.url, token);
  await delivery(s.url, [s.url], token, app, `one instance, SQLite: ${N} renames, one at a time, ${GAP_MS} ms apart (ms)`);
}

async function startRedis() {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'ignore'] });
  cleanups.unshift(() => proc.kill());
  await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
  });
  return `redis://127.0.0.1:${port}`;
}

async function partThree() {
  const pgScript = path.join(root, 'scripts/postgres.sh');
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-subs-pg-')), 'cluster');
  const port = 20000 + Math.floor(Math.random() * 20000);
  const url = execFileSync('bash', [pgScript, 'up', dir, String(port)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop();
  cleanups.push(() => {
    execFileSync('bash', [pgScript, 'down', dir], { stdio: 'ignore' });
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  });
  const redisUrl = await startRedis();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-subs-'));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const env = { DATABASE_URL: url, REDIS_URL: redisUrl };
  const token = initStore(dataDir, env);
  const inst = [];
  for (let i = 0; i < 3; i++) inst.push(await serve(dataDir, env));
  const app = await world(inst[1].url, token);
  await delivery(
    inst[0].url,
    inst.map((s) => s.url),
    token,
    app,
    `three instances, PostgreSQL + Redis: subscriber on instance 1, ${N} renames through instances 1, 2, 3 in turn, ${GAP_MS} ms apart (ms)`,
  );
}

/** RSS (KiB, from /proc/<pid>/status) and CPU time (ms, from /proc/<pid>/stat). */
function sample(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssKiB: Number(/VmRSS:\s+(\d+)/.exec(status)[1]), cpu: cpuMs(pid), at: performance.now() };
}

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench-subscriptions', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** One raw 2026 subscriptions/listen POST; resolves once the acknowledgement has arrived. */
async function openStream(dispatcher, base, token, uri, id, onData) {
  const body = { jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: [uri] }, _meta: MODERN_META } };
  const r = await request(`${base}/mcp`, {
    method: 'POST',
    dispatcher,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify(body),
    bodyTimeout: 0,
    headersTimeout: 30_000,
  });
  if (r.statusCode !== 200) throw new Error(`listen: HTTP ${r.statusCode} ${await r.body.text()}`);
  const stream = { ended: false, text: '', body: r.body };
  let acked;
  const ack = new Promise((resolve, reject) => {
    acked = resolve;
    r.body.once('error', reject);
  });
  r.body.on('data', (d) => {
    const s = d.toString();
    if (!stream.acknowledged) {
      stream.text += s;
      if (/"error"/.test(stream.text) && !/acknowledged/.test(stream.text)) throw new Error(`listen refused: ${stream.text.slice(0, 300)}`);
      if (/subscriptions\/acknowledged/.test(stream.text)) {
        stream.acknowledged = true;
        stream.text = '';
        acked();
      }
      return;
    }
    onData(s);
  });
  r.body.on('end', () => (stream.ended = true));
  r.body.on('error', () => (stream.ended = true));
  await ack;
  return stream;
}

async function partIdle() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-subs-idle-'));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const rootToken = initStore(dataDir);
  // Tokens for the streams: 16 streams per token at most (MAX_STREAMS_PER_TOKEN).
  const { openStore } = await import(path.join(root, 'dist/store/db.js'));
  const admin = await import(path.join(root, 'dist/core/admin.js'));
  const db = await openStore(dataDir, null);
  const owner = await admin.rootOwner(db);
  const tokens = [];
  for (let i = 0; i < Math.ceil(STREAMS / 16); i++) {
    tokens.push((await admin.createToken(db, { email: owner.email, team: owner.team, name: `bench-${i}`, permissions: ['root'], expires: 'never' })).token);
  }
  await db.destroy();
  const s = await serve(dataDir);
  const app = await world(s.url, rootToken);
  const uri = `berth://applications/${app}`;
  await rest(s.url, rootToken, 'GET', `/applications/${app}`);
  await sleep(3_000); // start-up work settles

  const idleWindow = async (label) => {
    const a = sample(s.pid);
    await sleep(IDLE_S * 1000);
    const b = sample(s.pid);
    const r = { label, rssBefore: a.rssKiB, rssAfter: b.rssKiB, cpuMs: b.cpu - a.cpu, seconds: (b.at - a.at) / 1000 };
    console.log(`  ${label}: RSS ${(a.rssKiB / 1024).toFixed(1)} → ${(b.rssKiB / 1024).toFixed(1)} MiB, CPU ${r.cpuMs} ms over ${r.seconds.toFixed(1)} s (load ${load()})`);
    return r;
  };

  console.log(`\n${STREAMS} idle listen streams on one instance (SQLite), ${IDLE_S} s idle windows`);
  const base = await idleWindow('no stream open (baseline)');

  const dispatcher = new Agent({ connections: null, pipelining: 0, bodyTimeout: 0 });
  const before = sample(s.pid);
  const streams = [];
  let got = 0;
  let allAt = null;
  let resolveAll;
  const all = new Promise((r) => (resolveAll = r));
  const onData = (text) => {
    if (!text.includes('notifications/resources/updated')) return;
    if (++got === STREAMS) {
      allAt = performance.now();
      resolveAll();
    }
  };
  const t0 = performance.now();
  for (let i = 0; i < STREAMS; i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(STREAMS, i + 50); j++) batch.push(openStream(dispatcher, s.url, tokens[Math.floor(j / 16)], uri, j + 1, onData));
    streams.push(...(await Promise.all(batch)));
  }
  const opened = sample(s.pid);
  console.log(
    `  opening ${streams.length} streams: ${((opened.at - t0) / 1000).toFixed(1)} s, ${opened.cpu - before.cpu} ms CPU in berth, RSS ${(before.rssKiB / 1024).toFixed(1)} → ${(opened.rssKiB / 1024).toFixed(1)} MiB`,
  );
  await sleep(3_000);
  // The first window still pays for the opening (its garbage is collected then); the second is the steady state.
  await idleWindow(`${STREAMS} streams open, first window`);
  const held = await idleWindow(`${STREAMS} streams open, second window`);
  const endedEarly = streams.filter((x) => x.ended).length;

  const p = await rest(s.url, rootToken, 'PATCH', `/applications/${app}`, { name: 'renamed-for-all' });
  const done = await Promise.race([all.then(() => true), sleep(30_000).then(() => false)]);
  console.log(
    `  one rename with ${STREAMS} streams open: ${got}/${STREAMS} notified, the last ${done ? `${f1(allAt - p.at)} ms` : '(not all within 30 s)'} after the PATCH's response (PATCH ${f1(p.ms)} ms); streams ended by the server while idle: ${endedEarly}`,
  );
  console.log(
    `  per stream: RSS +${(((held.rssAfter - base.rssAfter) * 1024) / STREAMS / 1024).toFixed(1)} KiB (end of the second window, against the baseline's end); idle CPU (second window) ${held.cpuMs} ms / ${base.cpuMs} ms baseline = ${(held.cpuMs / Math.max(1, base.cpuMs)).toFixed(2)}× (${f1(held.cpuMs / held.seconds)} ms CPU per s)`,
  );
  for (const x of streams) x.body.destroy();
  await dispatcher.close().catch(() => undefined);
}

try {
  console.log(`bench/subscriptions, ${os.cpus().length} CPUs, Node ${process.versions.node}, load ${load()}`);
  if (only.has('one')) await partOne();
  if (only.has('three')) await partThree();
  if (only.has('idle')) await partIdle();
} finally {
  for (const c of cleanups)
    await Promise.resolve()
      .then(c)
      .catch((e) => console.error(`cleanup: ${e.message}`));
}
process.exit(0);
