// bench/migrate: live migration of an application that keeps writing to its volume, at several
// volume sizes, against a by-hand archive relay between the same two engines, in one run.
//
//   npm run build && node bench/migrate/run.mjs [--sizes 128,1024,4096] [--engines DIR]
//
// For each size (MiB):
// - A volume on engine a gets that much data (8 MiB files of random bytes, 20 % in 128 KiB and
//   1–60 KB files), written by a busybox container.
// - Baseline, the by-hand tar relay: `podman run … tar -cf - . | podman run -i … tar -xf -`, busybox
//   tar in a container on each engine piped through the podman CLI, what a person types to move a
//   volume. And the archive API relay: a helper container on each engine (created with the podman CLI,
//   never started) and `curl GET /containers/{a}/archive?path=/v/. | curl -T - PUT
//   /containers/{b}/archive?path=/v` over the two engines' unix sockets: what an operator would
//   type to move a volume, with nothing verified. It runs while the writer (below) runs, as
//   berth's copy does.
// - berth: a real `berth serve` child (dist/bundle/cli.js) with both engines registered, an
//   application of the writer image (it appends to a log, rewrites a small file, makes and removes
//   temporary files and rewrites 4 KiB inside the large file in place, every 20 ms) on that
//   volume, running; POST /applications/{uuid}/migrate to a destination on engine b, polled every
//   20 ms. Reported: downtime_ms as berth records it (stop on a → switch done), the bulk copy's
//   throughput (round 1's archive bytes from the first byte seen to the start of round 2), the
//   rounds, the whole migration, and the RSS growth of the berth process (sampled every 50 ms from
//   /proc); the first migration of a process also loads code, so a small warm-up migration runs
//   first and its growth is printed apart.
// Goals (issue: live migration): downtime ≤ 2 s at 1 GiB and ≤ 0.5 s at 128 MiB with a writer
// running; bulk copy ≥ 1.0× the by-hand tar relay; RSS growth < 64 MiB.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { Agent, fetch } from 'undici';
import { startServer } from '../../scripts/lib/start-server.mjs';

// The pause's parts berth keeps in the migration's stored progress (not in the API's view).
const Database = createRequire(import.meta.url)('better-sqlite3');
function pausePartsOf(dataDir, migrationUuid) {
  const db = new Database(path.join(dataDir, 'berth.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare('select progress from migrations_jobs where uuid = ?').get(migrationUuid);
    return row ? (JSON.parse(row.progress).pause_ms ?? null) : null;
  } finally {
    db.close();
  }
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// BENCH_BERTH_CLI: another build (e.g. a copy of dist/ before a change) for a before/after run.
const CLI = process.env.BENCH_BERTH_CLI || path.join(ROOT, 'dist', 'bundle', 'cli.js');
const ENGINES = path.join(ROOT, 'scripts', 'engines.sh');
const IMAGE = 'localhost/berth-busybox:latest';
// The writer stamps each log line with the host's uptime (containers share /proc/uptime), so the
// pause can be read off the copy: from the last line written on the source to "done".
const WRITER_TAG = 'uptime';
const WRITER = `localhost/berth-bench-writer:${WRITER_TAG}`;
const WRITE = `trap 'exit 0' TERM INT; mkdir -p /data/logs /data/tmp; i=0; while :; do i=$((i + 1)); read up _ < /proc/uptime; echo "line $i $up" >> /data/logs/app.log; head -c $((i % 3000 + 1)) /dev/urandom > /data/state.bin; : > /data/tmp/t$i; rm -f /data/tmp/t$((i - 5)); if [ $((i % 20)) -eq 0 ]; then dd if=/dev/urandom of=/data/big/0.bin bs=4096 count=1 seek=$((i % 1000)) conv=notrunc 2>/dev/null; fi; sleep 0.02; done`;
const FILL = `set -e; cd /data; mkdir -p big mid small; total=$1
i=0; while [ $i -lt $((total * 8 / 10 / 8)) ]; do dd if=/dev/urandom of=big/$i.bin bs=1048576 count=8 2>/dev/null; i=$((i + 1)); done
i=0; while [ $i -lt $((total * 15 / 100 * 8)) ]; do dd if=/dev/urandom of=mid/$i.bin bs=131072 count=1 2>/dev/null; i=$((i + 1)); done
i=0; while [ $i -lt $((total * 5 / 100 * 34)) ]; do head -c $((i % 60 * 1000 + 1)) /dev/urandom > small/$i.dat; i=$((i + 1)); done`;

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const SIZES = opt('sizes', process.env.BENCH_MIGRATE_SIZES || '128,1024,4096')
  .split(',')
  .map(Number);
// Migrations per size (back and forth; the median is printed), and whether to time the relays.
const REPEAT = Number(opt('repeat', process.env.BENCH_MIGRATE_REPEAT || '3'));
const RELAYS = (process.env.BENCH_MIGRATE_RELAYS ?? '1') !== '0';
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const log = (...a) => console.error(`[bench:migrate ${new Date().toISOString().slice(11, 19)}]`, ...a);
const mb = (bytes, ms) => bytes / 1e6 / (ms / 1000);

let engDir = opt('engines', undefined);
const ownEngines = !engDir;
const serves = [];
const dataDirs = [];
async function cleanup() {
  for (const serve of serves) {
    if (serve.exitCode === null) {
      serve.kill('SIGTERM');
      await new Promise((r) => serve.once('exit', r));
    }
  }
  for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
  if (ownEngines && engDir) execFileSync('bash', [ENGINES, 'down', engDir], { stdio: 'ignore' });
}
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => cleanup().finally(() => process.exit(130)));

const podman = (engine, args) => execFileSync('bash', [ENGINES, 'podman', engine, engDir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
const rss = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

// The fills and relays block this process (execFileSync) for seconds to minutes, while berth
// closes idle keep-alive connections: a request written into such a socket fails ("other side
// closed"). Each call opens its own connection (pipelining 0: none is kept).
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

/**
 * The by-hand tar relay: what a person types to move a volume between two engines, busybox tar in
 * a container on each side piped through the podman CLI. Resolves its time.
 */
function tarRelay(volume) {
  const dst = `bench-tar-${Date.now()}`;
  podman('b', ['volume', 'create', dst]);
  execFileSync('sync');
  const t0 = performance.now();
  execFileSync('sh', [
    '-c',
    `bash "$1" podman a "$2" run --rm --network none -v "$3:/v:ro" ${IMAGE} tar -C /v -cf - . | bash "$1" podman b "$2" run --rm -i --network none -v "$4:/v" ${IMAGE} tar -C /v -xf -`,
    'relay',
    ENGINES,
    engDir,
    volume,
    dst,
  ]);
  const ms = performance.now() - t0;
  podman('b', ['volume', 'rm', '-f', dst]);
  return ms;
}

/** The archive API relay: curl GET from engine a piped to curl PUT on engine b (nothing verified). */
function relay(volume) {
  const dst = `bench-relay-${Date.now()}`;
  podman('b', ['volume', 'create', dst]);
  const helper = (e, v) => podman(e, ['create', '--network', 'none', '-v', `${v}:/v`, IMAGE, 'true']).trim();
  const src = helper('a', volume);
  const dstId = helper('b', dst);
  execFileSync('sync');
  const t0 = performance.now();
  execFileSync('sh', [
    '-c',
    `curl -sfS --unix-socket "$1" "http://d/v1.41/containers/$2/archive?path=/v/." | curl -sfS --unix-socket "$3" -T - -X PUT -H 'content-type: application/x-tar' "http://d/v1.41/containers/$4/archive?path=/v"`,
    'relay',
    `${engDir}/a/engine.sock`,
    src,
    `${engDir}/b/engine.sock`,
    dstId,
  ]);
  const ms = performance.now() - t0;
  podman('a', ['rm', '-f', src]);
  podman('b', ['rm', '-f', dstId]);
  podman('b', ['volume', 'rm', '-f', dst]);
  return ms;
}

/** Wall-clock ms of an uptime reading (the offset read now; both clocks tick alike meanwhile). */
function uptimeToWall(up) {
  const now = Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return Date.now() - (now - up) * 1000;
}

/**
 * The pause the application saw: from its last write on the source (the last log line, copied to
 * the target) to the migration's finished_at. /proc/uptime has 10 ms steps.
 */
function pauseOf(engine, volume, finishedAt) {
  const last = podman(engine, ['run', '--rm', '--network', 'none', '-v', `${volume}:/data:ro`, IMAGE, 'tail', '-n', '1', '/data/logs/app.log'])
    .trim()
    .split(' ');
  return Math.round(Date.parse(finishedAt) - uptimeToWall(Number(last[2])));
}

try {
  if (ownEngines) {
    engDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmig-'));
    log(`starting engines in ${engDir}`);
    execFileSync('bash', [ENGINES, 'up', engDir], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ENGINES_QUIET: '1' } });
  }
  engDir = path.resolve(engDir);
  for (const e of ['a', 'b']) {
    try {
      podman(e, ['image', 'exists', WRITER]);
    } catch {
      podman(e, ['import', '--quiet', '--change', `CMD ["sh","-c",${JSON.stringify(WRITE)}]`, `${engDir}/busybox-rootfs.tar`, WRITER]);
    }
  }
  /** A `berth serve` of one build with both engines registered. */
  async function berth(cli, label) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmig-data-'));
    dataDirs.push(dataDir);
    const { token } = JSON.parse(execFileSync(process.execPath, [cli, 'init', '--json', '--data', dataDir], { encoding: 'utf8' }));
    const s = await startServer({
      label: 'berth serve',
      args: [cli, 'serve', '--port', '0', '--data', dataDir],
      env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', BERTH_HELPER_IMAGE: IMAGE, API_RATE_LIMIT: '0', ...(process.env.BERTH_SYNC_TRACE ? { BERTH_SYNC_TRACE: process.env.BERTH_SYNC_TRACE } : {}) },
    });
    serves.push(s.proc);
    // BERTH_SYNC_TRACE=1: the final pass's marks (volume-sync.ts) go to a file per build, to read the pause's parts.
    if (process.env.BERTH_SYNC_TRACE === '1') {
      const traceFile = path.join(os.tmpdir(), `bench-migrate-trace-${label.replace(/\W+/g, '-')}.log`);
      fs.writeFileSync(traceFile, '');
      s.proc.stderr.on('data', (d) => fs.appendFileSync(traceFile, d));
      log(`final-pass trace: ${traceFile}`);
    }
    s.proc.once('exit', (code, sig) => log(`berth serve (${label}) exited (${code ?? sig}); its last output:\n${s.output().slice(-4000)}`));
    const reg = async (name, sock) => {
      const { uuid } = await api(s.url, token, 'POST', '/servers', { ip: '127.0.0.1', name: `${name}-${label}`, engine_endpoint: `unix://${sock}` });
      const v = await api(s.url, token, 'POST', `/servers/${uuid}/validate`);
      if (!v.is_usable) throw new Error(`engine ${name} not usable: ${v.validation_logs}`);
      return { uuid, dest: (await api(s.url, token, 'POST', `/servers/${uuid}/destinations`, { network: 'none' })).uuid };
    };
    const A = await reg('a', `${engDir}/a/engine.sock`);
    const B = await reg('b', `${engDir}/b/engine.sock`);
    const project = (await api(s.url, token, 'POST', '/projects', { name: 'bench' })).uuid;
    return { label, s, token, A, B, project, serve: s.proc, dataDir };
  }
  // BENCH_BERTH_CLI_BASE: a second build (say, dist/ copied before a change) migrates the same
  // sizes in the same run, so both see the same machine; the ratio of their pauses is printed.
  const builds = [await berth(CLI, 'this build')];
  if (process.env.BENCH_BERTH_CLI_BASE) builds.unshift(await berth(process.env.BENCH_BERTH_CLI_BASE, 'base build'));

  const rows = [];
  // A 1 MiB warm-up first: the first migration of a process also loads and compiles code.
  for (const size of [1, ...SIZES])
    for (const { label, s, token, A, B, project, serve, dataDir } of builds) {
      const { uuid } = await api(s.url, token, 'POST', '/applications/dockerimage', {
        project_uuid: project,
        server_uuid: A.uuid,
        destination_uuid: A.dest,
        environment_name: 'production',
        name: `writer-${size}-${label.split(' ')[0]}`,
        docker_registry_image_name: 'localhost/berth-bench-writer',
        docker_registry_image_tag: WRITER_TAG,
      });
      await api(s.url, token, 'POST', `/applications/${uuid}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
      const volume = `${uuid}-data`;
      podman('a', ['volume', 'create', volume]);
      log(`${size} MiB (${label}): filling`);
      podman('a', ['run', '--rm', '--network', 'none', '-v', `${volume}:/data`, IMAGE, 'sh', '-c', FILL, 'fill', String(size)]);
      const bytes = Number(
        podman('a', ['run', '--rm', '--network', 'none', '-v', `${volume}:/data:ro`, IMAGE, 'sh', '-c', 'find /data -type f -exec stat -c %s {} + | awk \'{ s += $1 } END { printf "%.0f", s }\'']),
      );
      const deploy = async () => {
        const d = await api(s.url, token, 'POST', `/deploy?uuid=${uuid}`);
        for (;;) {
          const g = await api(s.url, token, 'GET', `/deployments/${d.deployments[0].deployment_uuid}`);
          if (g.status === 'finished') break;
          if (g.status === 'failed') throw new Error(`deploy failed: ${g.logs}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        await new Promise((r) => setTimeout(r, 1000)); // the writer is writing
      };
      await deploy();
      // The relay runs under the same load as berth's copy: the writer running on the volume.
      let tarMs = NaN;
      let relayMs = NaN;
      if (RELAYS) {
        log(`${size} MiB: by-hand relays`);
        tarMs = tarRelay(volume);
        relayMs = relay(volume);
      }
      const volumes = [['a', volume]];
      const runs = [];
      // Repeats go back and forth (a → b, redeployed on b, b → a, …): each is a live migration.
      for (let rep = 0; rep < (size === 1 ? 1 : REPEAT); rep++) {
        const [here, there] = rep % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
        if (rep > 0) await deploy();
        log(`${size} MiB (${label}): live migration ${here} → ${there}`);
        execFileSync('sync');
        const rssBefore = rss(serve.pid);
        let peak = rssBefore;
        const sampler = setInterval(() => (peak = Math.max(peak, rss(serve.pid))), 50);
        const t0 = performance.now();
        const m = await api(s.url, token, 'POST', `/applications/${uuid}/migrate`, { destination_uuid: (there === 'b' ? B : A).dest });
        // The bulk copy is timed from its first bytes to the start of round 2 (polled every 20 ms), as
        // the relay is timed without making its helpers.
        let bulk;
        let firstBytes;
        let final;
        for (;;) {
          const g = await api(s.url, token, 'GET', `/migrations/${m.migration_uuid}`);
          if (firstBytes === undefined && g.progress.bytes > 0) firstBytes = performance.now();
          if (!bulk && (g.progress.round ?? 0) >= 2) bulk = { ms: performance.now() - (firstBytes ?? t0), bytes: g.progress.bytes };
          if (g.status !== 'pending' && g.status !== 'copying') {
            final = g;
            break;
          }
          await new Promise((r) => setTimeout(r, 20));
        }
        const total = performance.now() - t0;
        clearInterval(sampler);
        if (final.status !== 'finished') throw new Error(`migration ${final.status}: ${final.error}`);
        const moved = (await api(s.url, token, 'GET', `/applications/${uuid}/storages`)).persistent_storages[0].volume_name;
        volumes.push([there, moved]);
        runs.push({
          total,
          bulk,
          downtime: final.downtime_ms,
          pause: pauseOf(there, moved, final.finished_at),
          parts: pausePartsOf(dataDir, m.migration_uuid),
          rounds: final.progress.round,
          rssGrowth: (peak - rssBefore) / 1024,
        });
      }
      const med = (f) => median(runs.map(f));
      rows.push({
        label,
        size,
        bytes,
        tarMs,
        relayMs,
        runs: runs.length,
        pauses: runs.map((r) => r.pause),
        total: med((r) => r.total),
        bulk: runs[0].bulk,
        downtime: med((r) => r.downtime),
        pause: med((r) => r.pause),
        rounds: med((r) => r.rounds),
        rssGrowth: Math.max(...runs.map((r) => r.rssGrowth)),
        parts: runs.map((r) => r.parts).filter(Boolean),
      });
      for (const e of ['a', 'b']) podman(e, ['rm', '-f', uuid]);
      for (const [e, v] of volumes) podman(e, ['volume', 'rm', '-f', v]);
    }

  console.log(`bench/migrate — live migration with a writer running, two podman ${podman('a', ['--version']).trim().split(' ').pop()} engines on one host`);
  console.log(`(medians of ${REPEAT} migrations per size, back and forth; the machine may be shared)`);
  console.log(
    '| volume | by-hand tar relay | API relay (curl) | berth bulk copy | bulk / tar relay | bulk / API relay | rounds | pause (last write → done) | downtime (stop → done) | whole migration | berth RSS growth |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const warm of rows.filter((r) => r.size === 1))
    console.log(`(warm-up, ${warm.label}: a first migration of 1 MiB in the fresh process: RSS growth ${warm.rssGrowth.toFixed(1)} MiB, pause ${warm.pause} ms, downtime ${warm.downtime} ms)`);
  for (const r of rows.filter((x) => x.size !== 1)) {
    const tarRate = mb(r.bytes, r.tarMs);
    const relayRate = mb(r.bytes, r.relayMs);
    const bulkRate = r.bulk ? mb(r.bulk.bytes, r.bulk.ms) : NaN;
    console.log(
      `| ${r.size} MiB${builds.length > 1 ? `, ${r.label}` : ''} | ${tarRate.toFixed(0)} MB/s | ${relayRate.toFixed(0)} MB/s | ${bulkRate.toFixed(0)} MB/s | ${(bulkRate / tarRate).toFixed(2)}x | ${(bulkRate / relayRate).toFixed(2)}x | ${r.rounds} | ${r.pause} ms (${r.pauses.join(', ')}) | ${r.downtime} ms | ${(r.total / 1000).toFixed(1)} s | ${r.rssGrowth.toFixed(1)} MiB |`,
    );
  }
  // Where the pause went (medians): stop on the source, last pass sent, applied and verified, switch.
  for (const r of rows.filter((x) => x.size !== 1 && x.parts.length)) {
    const part = (k) => median(r.parts.map((p) => p[k]));
    console.log(
      `${r.size} MiB${builds.length > 1 ? `, ${r.label}` : ''}: downtime parts (median ms) stop ${part('stop')}, last pass sent ${part('send')}, applied + verified ${part('verify')}, switch ${part('switch')}`,
    );
  }
  if (builds.length > 1) {
    for (const size of SIZES) {
      const [base, mine] = builds.map((b) => rows.find((r) => r.size === size && r.label === b.label));
      console.log(`${size} MiB: pause ${mine.pause} ms (this build) / ${base.pause} ms (base build) = ${(mine.pause / base.pause).toFixed(2)}x`);
    }
  }
  console.log('goals: pause (last write on the source → done) ≤ 500 ms at every size; bulk / tar relay ≥ 1.0x; RSS growth < 64 MiB');
} catch (err) {
  // Said before the cleanup: stopping berth serve makes requests still in flight fail too.
  log('failed:', err);
  throw err;
} finally {
  await cleanup();
}
