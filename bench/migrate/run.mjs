// bench/migrate: volume transfer throughput of a berth migration against a plain `tar | tar`
// copy between the two engines' volume directories, in the same run, and berth's memory during it.
//
//   npm run build && node bench/migrate/run.mjs [--mib 1024] [--rounds 1] [--checksums] [--profile] [--engines DIR]
//
// - Starts two podman engines (scripts/engines.sh up; torn down at the end) unless --engines
//   points at engines already up, and fills one volume on engine a with --mib MiB of mixed files
//   (about half in 8 MiB files, 30 % in 256 KiB files, 20 % in 1–64 KiB files) by a busybox
//   container.
// - Baseline: `tar -C <volume a mountpoint> -cf - . | tar -C <fresh volume b mountpoint> -xf -`,
//   the mountpoints being the engines' own directories on this host (podman volume inspect).
//   Run before and after berth; the baseline throughput is their mean.
// - berth: a real `berth serve` child (dist/bundle/cli.js) with both engines registered and
//   validated, an application whose storage is that volume, and POST /applications/{uuid}/migrate
//   to a destination on engine b, polled (GET /migrations/{uuid}) until finished. The time is the
//   whole job: stop, copy source archive → destination archive (the source listed inside engine a
//   meanwhile), ownership fix-up (podman archives lose owners) and listing of the destination
//   inside engine b, comparison, switch-in. --checksums: BERTH_MIGRATION_CHECKSUMS=true, which adds
//   a read-back of the destination with sha256 of every file. The polling also records when the
//   last byte was sent (progress bytes = total), which splits the job into transfer and
//   verification + fix-up.
// - Memory: VmRSS of the berth process sampled every 50 ms from /proc/<pid>/status; growth =
//   highest sample during the migration − the sample just before it (VmHWM is printed too).
// - --profile: also times the raw pieces on the same volume through dist/runtime's EngineClient
//   (archive download drained; download → upload with nothing else; read-back with sha256).
// Every run starts after `sync`, so one run's dirty pages are not written back during the next.
// Volumes are removed only at the end of a round: on ext4, files created within seconds of many
// deletions pay for skipping the freshly freed inodes (seen here: tar | tar 4.4 s → 9.9 s).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../scripts/lib/start-server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'dist', 'bundle', 'cli.js');
const ENGINES = path.join(ROOT, 'scripts', 'engines.sh');
const IMAGE = 'localhost/berth-busybox:latest';

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const MIB = Number(opt('mib', 1024));
const ROUNDS = Number(opt('rounds', 1));
const PROFILE = argv.includes('--profile');
const CHECKSUMS = argv.includes('--checksums');
const givenEngines = opt('engines', undefined);

const MIXED = `
set -e
cd /data
total=$1
mkdir -p big/0 big/1 big/2 big/3
i=0; while [ $i -lt 32 ]; do mkdir -p "mid/$((i % 16))" "small/$i"; i=$((i + 1)); done
big=$((total / 2 / 8))
mid=$((total * 3 / 10 * 4))
i=0; while [ $i -lt $big ]; do dd if=/dev/urandom of="big/$((i % 4))/blob $i.bin" bs=1048576 count=8 2>/dev/null; i=$((i + 1)); done
i=0; while [ $i -lt $mid ]; do dd if=/dev/urandom of="mid/$((i % 16))/f$i.bin" bs=262144 count=1 2>/dev/null; i=$((i + 1)); done
rest=$((total * 1024 / 5)); sz=0; i=0
while [ $sz -lt $rest ]; do k=$((1 + (i * 37) % 64)); head -c $((k * 1024 - i % 1000)) /dev/urandom > "small/$((i % 32))/f $i.dat"; sz=$((sz + k)); i=$((i + 1)); done
: > small/empty
chown -R 1000:1000 small/1
`;

const log = (...a) => console.error('[bench:migrate]', ...a);
const sec = (ms) => (ms / 1000).toFixed(2);
const mbps = (bytes, ms) => bytes / 1e6 / (ms / 1000);
const mib = (kb) => (kb / 1024).toFixed(1);

let engDir = givenEngines;
let ownEngines = false;
let serve;
let dataDir;
async function cleanup() {
  if (serve && serve.exitCode === null) {
    serve.kill('SIGTERM');
    await new Promise((r) => serve.once('exit', r));
  }
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  if (ownEngines && engDir) execFileSync('bash', [ENGINES, 'down', engDir], { stdio: 'ignore' });
}
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => cleanup().finally(() => process.exit(130)));

const podman = (engine, args, opts = {}) => execFileSync('bash', [ENGINES, 'podman', engine, engDir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
const sync = () => execFileSync('sync');

const startServe = (env) =>
  startServer({ label: 'berth serve', args: [CLI, 'serve', '--port', '0', '--data', dataDir], env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env } });

function rssOf(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? 0);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

async function api(url, token, method, p, body) {
  const r = await fetch(`${url}/api/v1${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

function baseline(srcMount) {
  const dst = `bench-tar-${Date.now()}`;
  podman('b', ['volume', 'create', dst]);
  const dstMount = podman('b', ['volume', 'inspect', dst, '--format', '{{.Mountpoint}}']).trim();
  sync();
  const t0 = performance.now();
  execFileSync('sh', ['-c', 'tar -C "$1" -cf - . | tar -C "$2" -xf -', 'tar', srcMount, dstMount], { stdio: 'inherit' });
  const ms = performance.now() - t0;
  sync();
  const durable = performance.now() - t0;
  return { ms, durable, volume: dst };
}

async function berthMigration(token, url, pid, place, sourceVolumeFor) {
  const { uuid } = await api(url, token, 'POST', '/applications/dockerimage', {
    ...place.create,
    docker_registry_image_name: 'localhost/berth-busybox',
    docker_registry_image_tag: 'latest',
  });
  await api(url, token, 'POST', `/applications/${uuid}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
  sourceVolumeFor(`${uuid}-data`);
  sync();
  const before = rssOf(pid);
  let peak = before.rss;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid).rss)), 50);
  const t0 = performance.now();
  const m = await api(url, token, 'POST', `/applications/${uuid}/migrate`, { destination_uuid: place.destB });
  let sentAt;
  let final;
  for (;;) {
    const g = await api(url, token, 'GET', `/migrations/${m.migration_uuid}`);
    if (g.status !== 'pending' && g.status !== 'copying') {
      final = g;
      break;
    }
    if (sentAt === undefined && place.totalBytes && g.progress.bytes >= place.totalBytes) sentAt = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ms = performance.now() - t0;
  clearInterval(sampler);
  peak = Math.max(peak, rssOf(pid).rss);
  sync();
  const durable = performance.now() - t0;
  if (final.status !== 'finished') throw new Error(`migration ${final.status}: ${final.error}`);
  const { hwm } = rssOf(pid);
  // Move it back out of the way: the next round migrates a fresh app from the same source volume.
  const moved = (await api(url, token, 'GET', `/applications/${uuid}/storages`)).persistent_storages[0].volume_name;
  return { ms, durable, sentAt, bytes: final.progress.bytes, rssBefore: before.rss, rssPeak: peak, hwm, moved, uuid };
}

async function profile(srcVolume) {
  const { EngineClient } = await import(path.join(ROOT, 'dist', 'runtime', 'index.js'));
  const { manifestOf } = await import(path.join(ROOT, 'dist', 'runtime', 'tar-manifest.js'));
  const { PassThrough } = await import('node:stream');
  const a = new EngineClient({ endpoint: `unix://${engDir}/a/engine.sock` });
  const b = new EngineClient({ endpoint: `unix://${engDir}/b/engine.sock` });
  const helper = async (e, v, ro) =>
    (await e.createContainer(`bench-${Math.random().toString(36).slice(2, 10)}`, { image: IMAGE, cmd: ['true'], volumes: [{ volume: v, target: '/v', readOnly: ro, noCopy: true }], networkMode: 'none' })).Id;
  const timed = async (fn) => {
    sync();
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const src = await helper(a, srcVolume, true);
  const out = {};
  out['download only (drained)'] = await timed(async () => {
    for await (const _ of await a.getArchive(src, '/v/.'));
  });
  const dv = `bench-raw-${Date.now()}`;
  await b.createVolume(dv);
  const dst = await helper(b, dv, false);
  out['download → upload, nothing else'] = await timed(async () => {
    const up = new PassThrough({ highWaterMark: 1 << 20 });
    const put = b.putArchive(dst, '/v', up);
    for await (const c of await a.getArchive(src, '/v/.')) if (!up.write(c)) await new Promise((r) => up.once('drain', r));
    up.end();
    await put;
  });
  out['read-back with sha256 (manifest)'] = await timed(async () => manifestOf(await b.getArchive(dst, '/v/.'), { hash: true }));
  out['read-back without sha256'] = await timed(async () => manifestOf(await b.getArchive(dst, '/v/.'), { hash: false }));
  await a.removeContainer(src, { force: true });
  await b.removeContainer(dst, { force: true });
  await b.removeVolume(dv, { force: true });
  await a.close();
  await b.close();
  return out;
}

try {
  if (!engDir) {
    engDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmig-'));
    ownEngines = true;
    log(`starting engines in ${engDir}`);
    execFileSync('bash', [ENGINES, 'up', engDir], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ENGINES_QUIET: '1' } });
  }
  engDir = path.resolve(engDir);

  const src = `bench-src-${Date.now()}`;
  podman('a', ['volume', 'create', src]);
  log(`filling ${src} with ${MIB} MiB of mixed files`);
  const tFill = performance.now();
  podman('a', ['run', '--rm', '--network', 'none', '-v', `${src}:/data`, IMAGE, 'sh', '-c', MIXED, 'fill', String(MIB)]);
  const [files, bytes] = podman('a', ['run', '--rm', '--network', 'none', '-v', `${src}:/data:ro`, IMAGE, 'sh', '-c', 'cd /data && find . -type f | wc -l && find . -type f -exec stat -c %s {} + | awk \'{s+=$1} END {printf "%d\\n", s}\''])
    .trim()
    .split('\n')
    .map(Number);
  log(`filled in ${sec(performance.now() - tFill)} s: ${files} files, ${(bytes / 1048576).toFixed(0)} MiB`);
  const srcMount = podman('a', ['volume', 'inspect', src, '--format', '{{.Mountpoint}}']).trim();

  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmig-data-'));
  const { token } = JSON.parse(execFileSync(process.execPath, [CLI, 'init', '--json', '--data', dataDir], { encoding: 'utf8' }));
  // The limiter off: the job is polled every 100 ms.
  const s = await startServe({ BERTH_HELPER_IMAGE: IMAGE, API_RATE_LIMIT: '0', BERTH_MIGRATION_CHECKSUMS: String(CHECKSUMS) });
  serve = s.proc;
  const reg = async (name, sock) => {
    const { uuid } = await api(s.url, token, 'POST', '/servers', { ip: '127.0.0.1', name, engine_endpoint: `unix://${sock}` });
    const v = await api(s.url, token, 'POST', `/servers/${uuid}/validate`);
    if (!v.is_usable) throw new Error(`engine ${name} not usable: ${v.validation_logs}`);
    return { uuid, dest: (await api(s.url, token, 'POST', `/servers/${uuid}/destinations`, { network: 'none' })).uuid };
  };
  const A = await reg('a', `${engDir}/a/engine.sock`);
  const B = await reg('b', `${engDir}/b/engine.sock`);
  const project = (await api(s.url, token, 'POST', '/projects', { name: 'bench' })).uuid;
  const place = {
    create: { project_uuid: project, server_uuid: A.uuid, destination_uuid: A.dest, environment_name: 'production' },
    destB: B.dest,
    totalBytes: bytes,
  };

  const rows = [];
  for (let round = 1; round <= ROUNDS; round++) {
    log(`round ${round}: tar | tar`);
    const tarBefore = baseline(srcMount);
    log(`round ${round}: berth migration`);
    // The app's volume is the source volume itself: berth names it <app uuid>-data.
    const r = await berthMigration(token, s.url, serve.pid, place, (name) => {
      podman('a', ['volume', 'create', name]);
      const m = podman('a', ['volume', 'inspect', name, '--format', '{{.Mountpoint}}']).trim();
      execFileSync('sh', ['-c', 'tar -C "$1" -cf - . | tar -C "$2" -xf -', 'tar', srcMount, m]);
    });
    log(`round ${round}: tar | tar again`);
    const tarAfter = baseline(srcMount);
    podman('b', ['volume', 'rm', '-f', r.moved, tarBefore.volume, tarAfter.volume]);
    podman('a', ['volume', 'rm', '-f', `${r.uuid}-data`]);
    rows.push({ tarBefore, tarAfter, ...r });
  }

  let prof;
  if (PROFILE) {
    log('profile: raw pieces through dist/runtime');
    prof = await profile(src);
  }

  console.log(`\nvolume: ${files} files, ${(bytes / 1048576).toFixed(0)} MiB (${bytes} bytes) of mixed sizes; engines: podman ${podman('a', ['--version']).trim().split(' ').pop()}, 2 on one host`);
  for (const [i, r] of rows.entries()) {
    const base = mbps(bytes, (r.tarBefore.ms + r.tarAfter.ms) / 2);
    const baseDurable = mbps(bytes, (r.tarBefore.durable + r.tarAfter.durable) / 2);
    const berth = mbps(r.bytes, r.ms);
    const berthDurable = mbps(r.bytes, r.durable);
    console.log(`\nround ${i + 1}${CHECKSUMS ? ' (BERTH_MIGRATION_CHECKSUMS=true)' : ''}`);
    console.log(`  tar | tar              ${sec(r.tarBefore.ms)} s before, ${sec(r.tarAfter.ms)} s after → ${base.toFixed(1)} MB/s (mean)`);
    console.log(`  tar | tar; sync        ${sec(r.tarBefore.durable)} s before, ${sec(r.tarAfter.durable)} s after → ${baseDurable.toFixed(1)} MB/s (mean)`);
    console.log(`  berth migration        ${sec(r.ms)} s → ${berth.toFixed(1)} MB/s   (last byte sent at ${r.sentAt === undefined ? '?' : `${sec(r.sentAt)} s`}; verification + fix-up + switch ${r.sentAt === undefined ? '?' : `${sec(r.ms - r.sentAt)} s`})`);
    console.log(`  berth migration; sync  ${sec(r.durable)} s → ${berthDurable.toFixed(1)} MB/s`);
    console.log(`  berth / tar            ${((berth / base) * 100).toFixed(1)} %   (goal ≥ 70 %); with sync on both sides ${((berthDurable / baseDurable) * 100).toFixed(1)} %`);
    console.log(`  berth RSS              ${mib(r.rssBefore)} MiB before, ${mib(r.rssPeak)} MiB peak (VmHWM ${mib(r.hwm)} MiB) → growth ${mib(r.rssPeak - r.rssBefore)} MiB   (goal < 64 MiB)`);
  }
  if (prof) {
    console.log('\nprofile (same volume, each after sync):');
    for (const [k, ms] of Object.entries(prof)) console.log(`  ${k.padEnd(34)} ${sec(ms)} s → ${mbps(bytes, ms).toFixed(1)} MB/s`);
  }
} finally {
  await cleanup();
}
