// bench/migrate/final-pass-probe.mjs: where a live migration's last pass spends its time, on a
// volume of the bench's shape in entries (not bytes), with the bench's writer running until the
// stop. Uses VolumeSync directly (dist/), no berth server.
//
//   npm run build && node bench/migrate/final-pass-probe.mjs --engines DIR [--entries 12000] [--repeat 3]
//
// DIR: engines already up (scripts/engines.sh up DIR). With BERTH_SYNC_TRACE=1 each step's
// begin/end (JS) and the scripts' stage marks go to stderr as the host's uptime; this prints the
// pause (stop → final pass done) and its parts per repeat.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { VolumeSync } = await import(path.join(ROOT, 'dist/engine/volume-sync.js'));
const { EngineClient } = await import(path.join(ROOT, 'dist/engine/engine-client.js'));

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const DIR = opt('engines', process.env.BERTH_TEST_ENGINES_DIR);
if (!DIR) throw new Error('--engines DIR (scripts/engines.sh up DIR) is required');
const ENTRIES = Number(opt('entries', '12000'));
const REPEAT = Number(opt('repeat', '3'));
const IMAGE = 'localhost/berth-busybox:latest';
const podman = (e, args) => execFileSync('bash', [path.join(ROOT, 'scripts/engines.sh'), 'podman', e, DIR, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
const engine = (e) => new EngineClient({ endpoint: `unix://${path.join(DIR, e, 'engine.sock')}` });

// The bench's writer (bench/migrate/run.mjs), and its volume's shape in entries: 3 % 8 MiB-class
// files (here 4 KiB but for big/0.bin, which the writer rewrites in place), 40 % 128 KiB-class,
// the rest small.
const WRITE = `trap 'exit 0' TERM INT; mkdir -p /data/logs /data/tmp; i=0; while :; do i=$((i + 1)); read up _ < /proc/uptime; echo "line $i $up" >> /data/logs/app.log; head -c $((i % 3000 + 1)) /dev/urandom > /data/state.bin; : > /data/tmp/t$i; rm -f /data/tmp/t$((i - 5)); if [ $((i % 20)) -eq 0 ]; then dd if=/dev/urandom of=/data/big/0.bin bs=4096 count=1 seek=$((i % 1000)) conv=notrunc 2>/dev/null; fi; sleep 0.02; done`;
const big = Math.max(1, Math.round(ENTRIES * 0.033));
const mid = Math.round(ENTRIES * 0.42);
const small = Math.max(0, ENTRIES - big - mid);
const FILL = `set -e; cd /data; mkdir -p big mid small; x=$(head -c 4096 /dev/zero | tr '\\0' x)
dd if=/dev/urandom of=big/0.bin bs=1048576 count=8 2>/dev/null
i=1; while [ $i -lt ${big} ]; do printf %s "$x" > big/$i.bin; i=$((i + 1)); done
i=0; while [ $i -lt ${mid} ]; do printf %s "$x" > mid/$i.bin; i=$((i + 1)); done
i=0; while [ $i -lt ${small} ]; do printf %s "$i" > small/$i.dat; i=$((i + 1)); done`;

const tag = `probe-${process.pid}`;
const src = `${tag}-src`;
const dst = `${tag}-dst`;
const log = (...a) => console.error('[probe]', ...a);
podman('a', ['volume', 'create', src]);
log(`filling ${ENTRIES} entries`);
podman('a', ['run', '--rm', '--network', 'none', '-v', `${src}:/data`, IMAGE, 'sh', '-c', FILL]);
const writer = () => podman('a', ['run', '-d', '--name', `${tag}-w`, '--network', 'none', '-v', `${src}:/data`, IMAGE, 'sh', '-c', WRITE]).trim();
writer();
const sync = await VolumeSync.open({ from: { engine: engine('a'), volume: src }, to: { engine: engine('b'), volume: dst }, helperImage: IMAGE, helperLabels: { 'berth.probe': tag } });
const pauses = [];
try {
  await sync.round(undefined, { sourceInUse: true });
  for (let r = 0; r < REPEAT; r++) {
    await sync.round(undefined, { sourceInUse: true });
    await sync.prepareFinal();
    // As live-runtime does: the last pass's execs start before the stop (older builds lack it).
    if (sync.armFinal) await sync.armFinal();
    await new Promise((res) => setTimeout(res, 500));
    podman('a', ['stop', '-t', '2', `${tag}-w`]);
    const t0 = performance.now();
    const done = await sync.finalPass();
    const ms = performance.now() - t0;
    pauses.push(ms);
    log(`final pass ${r + 1}: ${ms.toFixed(0)} ms, sent ${done.sentEntries} entries / ${done.transferredBytes} bytes, removed ${done.removed}, entries ${done.entries}`);
    podman('a', ['rm', '-f', `${tag}-w`]);
    if (r + 1 < REPEAT) writer();
  }
  const v = await sync.verify(true);
  log(`verified: ${v.entries} entries, checksums equal`);
} finally {
  await sync.close();
  try {
    podman('a', ['rm', '-f', `${tag}-w`]);
  } catch {}
  podman('a', ['volume', 'rm', '-f', src]);
  podman('b', ['volume', 'rm', '-f', dst]);
}
const sorted = [...pauses].sort((a, b) => a - b);
console.log(JSON.stringify({ entries: ENTRIES, final_pass_ms: pauses.map((x) => Math.round(x)), median_ms: Math.round(sorted[Math.floor(sorted.length / 2)]) }));
