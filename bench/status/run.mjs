// bench/status: the observed status of 200 applications on two real engines, in one run.
//
//   npm run build && node bench/status/run.mjs [--apps 200] [--lists 200] [--seconds 5]
//                                              [--connections 10] [--rounds 3] [--changes 10]
//                                              [--drops 4] [--idle 10] [--requests]
//
// - Two podman engines (scripts/engines.sh up in a temp dir), each behind a counting relay: a
//   unix-socket server in this process that pipes every connection to the engine's socket and
//   records each HTTP request line it forwards. berth's servers are registered on the relay
//   sockets, so every engine call berth makes is seen.
// - berth: a real `berth serve` (dist/bundle/cli.js) on a fresh SQLite store, both engines
//   registered and validated (managed), a destination on network `none` each, --apps
//   applications (half per server) of an idle busybox image, created and deployed (comma lists
//   to POST /deploy), waited for until every deployment finished and every application reports
//   `running:…` from the watcher. The watcher's periodic full look is set to an hour
//   (BERTH_WATCH_RECONCILE_MS), so the only engine traffic left is the events stream it follows.
// - Baseline: a second `berth serve` on a copy of that store (better-sqlite3's online backup)
//   where the servers have no engine endpoint (not managed: nothing is watched) and every
//   observation column is emptied, so each row's status is the recorded one. Same rows, same
//   list code, no observed status and no engine anywhere.
// - Reads: `GET /api/v1/applications` in pages of 100 (the contract's largest page), a whole list
//   of --apps rows per measurement: --lists sequential lists after a warm-up (ms per list), then
//   autocannon (--connections, --seconds, both pages alternating), rounds alternating between the
//   two servers, median round reported, with the server's CPU µs per list from /proc. The relays'
//   counts over the whole read phase are the "engine calls per read" (expected: 0; the events
//   stream opened before it is not a request made during it).
// - Out-of-band change: for --changes applications (on both engines) `podman rm -f` through
//   the podman CLI, and for as many others `podman stop`, one at a time, while
//   GET /api/v1/applications/{uuid} is polled every 20 ms until it says `exited`. Reported from
//   the moment the podman command was started (an upper bound: the container goes somewhere
//   during the command) and from the moment it returned; min / median / max. Requirement: ≤ 5 s.
//   Also the engine requests berth made per change (the watcher's look after an event).
// - Events stream drops (--drops): the relay cuts an engine's events connection (the engine
//   itself fine) and at once `podman rm -f` removes an application there; reported: when berth
//   shows it, and what the engine's last application (untouched; the last one the watcher looks
//   at again) says meanwhile.
// - Also: each server's CPU while idle (--idle seconds, no requests), and with --requests every
//   engine request of the run by kind.
// Everything is torn down at the end, also on failure or Ctrl-C: berth processes, relays, engines.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { cpuMs } from '../../scripts/lib/proc.mjs';
import { startServer } from '../../scripts/lib/start-server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'dist', 'bundle', 'cli.js');
const ENGINES = path.join(ROOT, 'scripts', 'engines.sh');
const BUSYBOX = 'localhost/berth-busybox:latest';
const IDLE = 'localhost/berth-bench-idle';
// Sleeps without waking (no `sleep 1` loop: 200 of those would fork 200 times a second); TERM
// interrupts `wait` and ends it at once, so `podman stop` is quick.
const IDLE_CMD = "trap 'exit 0' TERM INT; sleep 999999999 & wait";

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const APPS = opt('apps', 200);
const LISTS = opt('lists', 200);
const SECONDS = opt('seconds', 5);
const CONNECTIONS = opt('connections', 10);
const ROUNDS = opt('rounds', 3);
const CHANGES = opt('changes', 10);
const IDLE_S = opt('idle', 10);
const DROPS = opt('drops', 4);
const PER_PAGE = 100;
const PAGES = Math.ceil(APPS / PER_PAGE);
/** The whole run is abandoned (and torn down) after this long. */
const WATCHDOG_MS = 25 * 60_000;

const log = (...a) => console.error(`[bench:status ${new Date().toISOString().slice(11, 19)}]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

let engDir;
let dataDir;
let baseDir;
const servers = [];
const relays = [];
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    await Promise.all(servers.map((s) => s.stop().catch(() => undefined)));
    await Promise.all(relays.map((r) => r.close()));
    if (engDir) {
      log('engines down');
      try {
        execFileSync('bash', [ENGINES, 'down', engDir], { stdio: 'ignore', timeout: 180_000 });
      } catch (err) {
        log(`engines down failed: ${err.message}`);
      }
    }
    for (const d of [dataDir, baseDir, engDir]) if (d) fs.rmSync(d, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => cleanup().finally(() => process.exit(130)));
const watchdog = setTimeout(() => {
  log(`gave up after ${WATCHDOG_MS / 60_000} min`);
  cleanup().finally(() => process.exit(1));
}, WATCHDOG_MS);
watchdog.unref();

const podman = (engine, args, timeout = 120_000) => execFileSync('bash', [ENGINES, 'podman', engine, engDir, ...args], { encoding: 'utf8', timeout, maxBuffer: 64 << 20 });

/** The podman CLI, asynchronously (the status is polled while it runs); resolves when it exits. */
function podmanAsync(engine, args) {
  return new Promise((resolve, reject) => {
    const p = spawn('bash', [ENGINES, 'podman', engine, engDir, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    const t = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.once('exit', (code) => {
      clearTimeout(t);
      if (code === 0) resolve(performance.now());
      else reject(new Error(`podman ${args.join(' ')} exited ${code}: ${err}`));
    });
  });
}

// Not anchored at the line's start: on a keep-alive connection a request can follow a body that
// does not end in CRLF (a JSON body), on the same "line".
const REQUEST_LINE = /(?:^|[^A-Za-z])(GET|POST|PUT|DELETE|HEAD|PATCH|OPTIONS) (\/\S*) HTTP\/1\.[01]$/;

/**
 * A unix socket in front of an engine's: pipes each connection through and records every HTTP
 * request line the client sends (keep-alive connections carry many). Bodies are scanned too, but
 * nothing berth sends in a body is a line shaped like `GET /path HTTP/1.1`.
 */
function countingRelay(listen, target) {
  const seen = [];
  const sockets = new Set();
  /** Client connections that carry an events stream. */
  const streams = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    sockets.add(client).add(upstream);
    let tail = '';
    client.on('data', (buf) => {
      const lines = (tail + buf.toString('latin1')).split('\r\n');
      tail = lines.pop().slice(-4096);
      for (const l of lines) {
        const m = REQUEST_LINE.exec(l);
        if (!m) continue;
        seen.push({ t: performance.now(), method: m[1], path: m[2] });
        if (isEvents({ path: m[2] })) streams.add(client);
      }
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      streams.delete(client);
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen, () =>
      resolve({
        seen,
        /** Cuts the events streams (both directions), as a network drop would; how many. */
        dropStreams: () => {
          const n = streams.size;
          for (const c of [...streams]) c.destroy();
          return n;
        },
        close: () =>
          new Promise((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      }),
    );
  });
}

const isEvents = (r) => /\/events(\?|$)/.test(r.path);
/** What two relays saw between two instants (performance.now()). */
function seenBetween(t0, t1) {
  return relays.flatMap((r, i) => r.seen.filter((x) => x.t >= t0 && x.t <= t1).map((x) => ({ ...x, engine: 'ab'[i] })));
}

async function api(url, token, method, p, body) {
  const r = await fetch(`${url}/api/v1${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${text}`);
  return { json: text ? JSON.parse(text) : undefined, headers: r.headers };
}

/** The whole list, every page; the rows. */
async function list(url, token) {
  const rows = [];
  for (let page = 1; page <= PAGES; page++) rows.push(...(await api(url, token, 'GET', `/applications?per_page=${PER_PAGE}&page=${page}`)).json);
  return rows;
}

async function until(what, fn, timeoutMs, everyMs = 250) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

function cannon(url, token) {
  const requests = Array.from({ length: PAGES }, (_, i) => ({ method: 'GET', path: `/api/v1/applications?per_page=${PER_PAGE}&page=${i + 1}` }));
  return new Promise((resolve, reject) => {
    autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers: { authorization: `Bearer ${token}` }, requests }, (err, r) => {
      if (err) return reject(err);
      if (r.non2xx || r.errors) return reject(new Error(`${r.non2xx} non-2xx answers, ${r.errors} errors from ${url}`));
      resolve(r);
    });
  });
}

try {
  const t00 = performance.now();
  // Short: the engine sockets live under it (unix socket paths are limited to ~100 bytes).
  engDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bst-'));
  log(`engines up in ${engDir}`);
  execFileSync('bash', [ENGINES, 'up', engDir], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ENGINES_QUIET: '1' }, timeout: 240_000 });
  for (const e of ['a', 'b']) {
    try {
      podman(e, ['image', 'exists', `${IDLE}:latest`]);
    } catch {
      podman(e, [
        'import',
        '--quiet',
        '--change',
        `CMD ["sh","-c",${JSON.stringify(IDLE_CMD)}]`,
        '--change',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        `${engDir}/busybox-rootfs.tar`,
        `${IDLE}:latest`,
      ]);
    }
  }
  for (const e of ['a', 'b']) relays.push(await countingRelay(`${engDir}/relay-${e}.sock`, `${engDir}/${e}/engine.sock`));

  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bst-data-'));
  const { token } = JSON.parse(execFileSync(process.execPath, [CLI, 'init', '--json', '--data', dataDir], { encoding: 'utf8' }));
  const env = {
    PATH: process.env.PATH,
    LOG_LEVEL: 'warn',
    API_RATE_LIMIT: '0',
    BERTH_HELPER_IMAGE: BUSYBOX,
    // Every deployment queued at once: room in the per-server queues, a few running at a time.
    BERTH_QUEUE_CONCURRENCY: '6',
    BERTH_QUEUE_CAP: String(APPS),
    // No periodic full look during the run: what the relays see is the events stream alone.
    BERTH_WATCH_RECONCILE_MS: '3600000',
  };
  const watched = await startServer({ label: 'berth serve', args: [CLI, 'serve', '--port', '0', '--data', dataDir], env, timeoutMs: 60_000 });
  servers.push(watched);

  const reg = async (name, sock) => {
    const { uuid } = (await api(watched.url, token, 'POST', '/servers', { ip: '127.0.0.1', name, engine_endpoint: `unix://${sock}` })).json;
    const v = (await api(watched.url, token, 'POST', `/servers/${uuid}/validate`)).json;
    if (!v.is_usable) throw new Error(`engine ${name} not usable: ${v.validation_logs}`);
    return { uuid, dest: (await api(watched.url, token, 'POST', `/servers/${uuid}/destinations`, { network: 'none' })).json.uuid };
  };
  const targets = [await reg('a', `${engDir}/relay-a.sock`), await reg('b', `${engDir}/relay-b.sock`)];
  const project = (await api(watched.url, token, 'POST', '/projects', { name: 'bench-status' })).json.uuid;

  log(`creating ${APPS} applications`);
  const apps = [];
  for (let i = 0; i < APPS; i++) {
    const t = targets[i % 2];
    const { uuid } = (
      await api(watched.url, token, 'POST', '/applications/dockerimage', {
        project_uuid: project,
        server_uuid: t.uuid,
        destination_uuid: t.dest,
        environment_name: 'production',
        name: `idle-${i}`,
        docker_registry_image_name: IDLE,
        docker_registry_image_tag: 'latest',
      })
    ).json;
    apps.push({ uuid, engine: 'ab'[i % 2] });
  }

  log(`deploying ${APPS} applications`);
  const tDeploy = performance.now();
  const deployments = [];
  for (let i = 0; i < apps.length; i += 50) {
    const batch = apps
      .slice(i, i + 50)
      .map((a) => a.uuid)
      .join(',');
    deployments.push(...(await api(watched.url, token, 'POST', `/deploy?uuid=${batch}`)).json.deployments.map((d) => d.deployment_uuid));
  }
  await until(
    'every deployment to end',
    async () => {
      const { headers } = await api(watched.url, token, 'GET', '/deployments?per_page=1');
      const left = Number(headers.get('x-total-count'));
      return left === 0 ? true : undefined;
    },
    15 * 60_000,
    1000,
  );
  const failed = [];
  for (const d of deployments) {
    const r = (await api(watched.url, token, 'GET', `/deployments/${d}`)).json;
    if (r.status !== 'finished') failed.push(`${d}: ${r.status}`);
  }
  if (failed.length) throw new Error(`${failed.length} deployments did not finish: ${failed.slice(0, 5).join('; ')}`);
  const deployS = (performance.now() - tDeploy) / 1000;
  log(`deployed in ${deployS.toFixed(1)} s; waiting for every application to be observed running`);
  await until(
    'every application observed running',
    async () => {
      const rows = await list(watched.url, token);
      return rows.length === APPS && rows.every((r) => r.status.startsWith('running')) ? true : undefined;
    },
    60_000,
    500,
  );
  const running = [Number(podman('a', ['ps', '-q']).trim().split('\n').filter(Boolean).length), Number(podman('b', ['ps', '-q']).trim().split('\n').filter(Boolean).length)];
  log(`engines run ${running[0]} + ${running[1]} containers`);

  // The baseline: the same store, copied online, with nothing managed and nothing observed.
  baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bst-base-'));
  {
    const src = new Database(path.join(dataDir, 'berth.sqlite'), { readonly: true });
    await src.backup(path.join(baseDir, 'berth.sqlite'));
    src.close();
    const db = new Database(path.join(baseDir, 'berth.sqlite'));
    db.prepare('UPDATE servers SET engine_endpoint = NULL').run();
    db.prepare('UPDATE resources SET observed_status = NULL, observed = NULL, observed_at = NULL, restart_count = NULL, last_exit_code = NULL').run();
    db.prepare('DELETE FROM engine_watch_leases').run();
    db.close();
  }
  const baseline = await startServer({ label: 'berth serve (baseline)', args: [CLI, 'serve', '--port', '0', '--data', baseDir], env, timeoutMs: 60_000 });
  servers.push(baseline);
  const baseRows = await list(baseline.url, token);
  if (baseRows.length !== APPS || !baseRows.every((r) => r.status === 'running' && r.observed_at === null)) {
    throw new Error(`baseline rows are not the record-only ones: ${JSON.stringify(baseRows[0])}`);
  }
  const watchedRows = await list(watched.url, token);
  const listBytes = { watched: JSON.stringify(watchedRows).length, baseline: JSON.stringify(baseRows).length };
  // What each server costs when nobody asks anything (the watcher's events stream and leases).
  log('idle CPU');
  await sleep(1000);
  const idle0 = [cpuMs(watched.pid), cpuMs(baseline.pid)];
  await sleep(IDLE_S * 1000);
  const idleCpu = [cpuMs(watched.pid) - idle0[0], cpuMs(baseline.pid) - idle0[1]].map((ms) => ms / IDLE_S);
  log(`setup took ${((performance.now() - t00) / 1000).toFixed(0)} s; reads`);

  // Reads.
  const tReads0 = performance.now();
  const modes = [
    ['observed status (2 watched engines)', watched],
    ['baseline: record only, no engines', baseline],
  ];
  const samples = Object.fromEntries(modes.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, s] of round % 2 ? [...modes].reverse() : modes) {
      for (let i = 0; i < 20; i++) await list(s.url, token); // warm-up
      const seq = [];
      const cpu0 = cpuMs(s.pid);
      for (let i = 0; i < LISTS; i++) {
        const t = performance.now();
        const rows = await list(s.url, token);
        seq.push(performance.now() - t);
        if (rows.length !== APPS) throw new Error(`${name}: a list of ${rows.length} rows`);
      }
      const seqCpu = ((cpuMs(s.pid) - cpu0) * 1000) / LISTS;
      const cpu1 = cpuMs(s.pid);
      const r = await cannon(s.url, token);
      const lists = r.requests.total / PAGES;
      samples[name].push({ seqMs: median(seq), seqP99: q(seq, 0.99), seqCpu, lps: r.requests.average / PAGES, cannonCpu: ((cpuMs(s.pid) - cpu1) * 1000) / lists, p50: r.latency.p50 });
    }
  }
  const tReads1 = performance.now();
  const duringReads = seenBetween(tReads0, tReads1);
  const readLists =
    ROUNDS * 2 * (LISTS + 20) +
    Object.values(samples)
      .flat()
      .reduce((n, x) => n + x.lps * SECONDS, 0);

  // Out-of-band changes, one at a time.
  log('out-of-band changes');
  const changes = [];
  const picks = apps.slice(0, CHANGES * 2);
  for (let i = 0; i < picks.length; i++) {
    const a = picks[i];
    // rm, rm, stop, stop, ...: the applications alternate engines, so each kind meets both.
    const how = Math.floor(i / 2) % 2 === 0 ? ['rm', '-f', a.uuid] : ['stop', '-t', '5', a.uuid];
    const t0 = performance.now();
    const done = podmanAsync(a.engine, how);
    let returned;
    done.then(
      (t) => (returned = t),
      () => undefined,
    );
    let seenAt;
    while (performance.now() - t0 < 15_000) {
      const r = (await api(watched.url, token, 'GET', `/applications/${a.uuid}`)).json;
      if (r.status === 'exited') {
        seenAt = performance.now();
        break;
      }
      await sleep(20);
    }
    const tEnd = await done;
    changes.push({
      how: how[0],
      engine: a.engine,
      fromStart: seenAt === undefined ? Infinity : seenAt - t0,
      fromReturn: seenAt === undefined ? Infinity : Math.max(0, seenAt - (returned ?? tEnd)),
      cmdMs: tEnd - t0,
      requests: 0,
      t0,
      tEnd: Math.max(tEnd, seenAt ?? 0),
    });
    await sleep(300); // the watcher's trailing looks (cleanup events) belong to this change
    changes.at(-1).requests = seenBetween(t0, performance.now()).filter((x) => !isEvents(x)).length;
  }

  if (argv.includes('--requests')) {
    // Every engine request of the run, by kind (ids and query strings folded).
    const kinds = new Map();
    for (const x of seenBetween(0, Infinity)) {
      const k = `${x.engine}: ${x.method} ${x.path.replace(/\?.*/, '').replace(/\/[a-z0-9]{24}(-[a-z0-9-]+)?(?=\/|$)/g, '/{name}')}`;
      kinds.set(k, (kinds.get(k) ?? 0) + 1);
    }
    console.log(
      `\nengine requests in the whole run, by kind:\n${[...kinds]
        .sort()
        .map(([k, n]) => `  ${k}  ${n}`)
        .join('\n')}`,
    );
  }
  // The events stream cut (the engine itself fine): the watcher reconnects, looks at everything
  // again, and a change made meanwhile shows. Meanwhile, what does an untouched neighbour say?
  log('events stream drops');
  const drops = [];
  const rest = apps.slice(CHANGES * 2);
  for (let i = 0; i < DROPS; i++) {
    // The neighbour is the engine's last application: the last the watcher looks at again.
    const a = rest[i];
    const neighbour = apps.findLast((x) => x.engine === a.engine);
    const relay = relays['ab'.indexOf(a.engine)];
    const t0 = performance.now();
    const cut = relay.dropStreams();
    const done = podmanAsync(a.engine, ['rm', '-f', a.uuid]);
    done.catch(() => undefined);
    let seenAt;
    const other = new Map();
    let firstOther;
    let lastOther;
    while (performance.now() - t0 < 20_000) {
      const [r, n] = await Promise.all([a.uuid, neighbour.uuid].map(async (u) => (await api(watched.url, token, 'GET', `/applications/${u}`)).json.status));
      const now = performance.now() - t0;
      other.set(n, (other.get(n) ?? 0) + 1);
      if (!n.startsWith('running')) {
        firstOther ??= now;
        lastOther = now;
      }
      if (r === 'exited' && seenAt === undefined) seenAt = now;
      if (seenAt !== undefined && n.startsWith('running') && now > 3000) break;
      await sleep(20);
    }
    await done;
    drops.push({
      engine: a.engine,
      cut,
      requests: seenBetween(t0, performance.now()).filter((x) => !isEvents(x)).length,
      seenAt: seenAt ?? Infinity,
      neighbour: [...other.keys()].join(' → '),
      window: firstOther === undefined ? 0 : lastOther - firstOther + 20,
    });
    await sleep(500);
  }

  // Report.
  const podmanVersion = podman('a', ['--version']).trim().split(' ').pop();
  console.log(`\nbench/status — ${APPS} applications on two podman ${podmanVersion} engines (${running.join(' + ')} containers running), load average ${os.loadavg()[0].toFixed(2)}`);
  console.log(`setup: ${APPS} deployments (comma lists of 50, 6 at a time per server) finished in ${deployS.toFixed(1)} s; whole setup ${((tReads0 - t00) / 1000).toFixed(0)} s`);
  console.log(`\nGET /api/v1/applications, ${APPS} rows in ${PAGES} page(s) of ${PER_PAGE} (one "list" = every page), median of ${ROUNDS} alternating rounds:`);
  console.log(`  list JSON: ${listBytes.watched} bytes with observed status, ${listBytes.baseline} without`);
  console.log('| server | sequential: ms per list (p99) | server CPU µs per list | autocannon: lists/s | server CPU µs per list | p50 ms per page |');
  console.log('|---|---|---|---|---|---|');
  const m = {};
  for (const [name] of modes) {
    const xs = samples[name];
    m[name] = {
      seqMs: median(xs.map((x) => x.seqMs)),
      seqP99: median(xs.map((x) => x.seqP99)),
      seqCpu: median(xs.map((x) => x.seqCpu)),
      lps: median(xs.map((x) => x.lps)),
      cannonCpu: median(xs.map((x) => x.cannonCpu)),
      p50: median(xs.map((x) => x.p50)),
    };
    const r = m[name];
    console.log(`| ${name} | ${r.seqMs.toFixed(2)} (${r.seqP99.toFixed(2)}) | ${r.seqCpu.toFixed(0)} | ${r.lps.toFixed(0)} | ${r.cannonCpu.toFixed(0)} | ${r.p50} |`);
  }
  const [W, B] = modes.map(([n]) => m[n]);
  console.log(
    `ratio observed / baseline: sequential time per list ${(W.seqMs / B.seqMs).toFixed(2)}x, lists/s ${(W.lps / B.lps).toFixed(2)}x, CPU per list (autocannon) ${(W.cannonCpu / B.cannonCpu).toFixed(2)}x`,
  );
  console.log(`  (each round's lists/s: observed ${samples[modes[0][0]].map((x) => x.lps.toFixed(0)).join(' / ')}; baseline ${samples[modes[1][0]].map((x) => x.lps.toFixed(0)).join(' / ')})`);

  console.log(`idle, no requests (${IDLE_S} s): observed ${idleCpu[0].toFixed(1)} ms CPU per second, baseline ${idleCpu[1].toFixed(1)} ms CPU per second`);
  const nonEvents = duringReads.filter((x) => !isEvents(x));
  const streams = relays.map((r) => r.seen.filter(isEvents).length);
  console.log(
    `\nengine requests during the read phase (${((tReads1 - tReads0) / 1000).toFixed(0)} s, ~${Math.round(readLists)} lists = ~${Math.round(readLists * APPS)} rows read): ${nonEvents.length}${nonEvents.length ? ` (${[...new Set(nonEvents.map((x) => `${x.engine}: ${x.method} ${x.path}`))].slice(0, 10).join(', ')})` : ''}; events streams opened then: ${duringReads.length - nonEvents.length} (in the whole run: a ${streams[0]}, b ${streams[1]})`,
  );

  const stat = (xs) => `${Math.round(Math.min(...xs))} / ${Math.round(median(xs))} / ${Math.round(Math.max(...xs))}`;
  console.log(`\nout-of-band change → GET /applications/{uuid} says exited (polled every 20 ms), ms, min / median / max:`);
  console.log("| change | n | from the podman command's start | after it returned | podman command itself | engine requests by berth per change |");
  console.log('|---|---|---|---|---|---|');
  for (const how of ['rm', 'stop']) {
    const xs = changes.filter((c) => c.how === how);
    console.log(
      `| podman ${how === 'rm' ? 'rm -f' : 'stop'} | ${xs.length} | ${stat(xs.map((c) => c.fromStart))} | ${stat(xs.map((c) => c.fromReturn))} | ${stat(xs.map((c) => c.cmdMs))} | ${stat(xs.map((c) => c.requests))} |`,
    );
  }
  console.log(`\nevents stream cut by the relay (engine fine), then at once podman rm -f of an application on that engine; the engine's last application (the watcher's last look) polled alongside:`);
  console.log('| engine | streams cut | rm -f shown after (ms) | last neighbour said | it was not running for (ms) | engine requests by berth |');
  console.log('|---|---|---|---|---|---|');
  for (const d of drops) console.log(`| ${d.engine} | ${d.cut} | ${Number.isFinite(d.seenAt) ? Math.round(d.seenAt) : 'never (20 s)'} | ${d.neighbour} | ${Math.round(d.window)} | ${d.requests} |`);
  const worst = Math.max(...changes.map((c) => c.fromStart));
  console.log(`requirement: shown within 5000 ms — worst ${Number.isFinite(worst) ? Math.round(worst) : 'never (15 s)'} ms from the command's start: ${worst <= 5000 ? 'met' : 'NOT met'}`);
  console.log(`no engine call per read: ${nonEvents.length === 0 ? 'met' : 'NOT met'} (${nonEvents.length} engine requests during the reads)`);
  process.exitCode = nonEvents.length === 0 && worst <= 5000 ? 0 : 1;
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await cleanup();
  clearTimeout(watchdog);
}
