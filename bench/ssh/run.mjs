// bench/ssh: the SSH transport against the same engines' local sockets, in one run.
//
//   npm run build && node bench/ssh/run.mjs [--mib 512] [--calls 300] [--rounds 3]
//
// - Starts two podman engines (scripts/engines.sh) and a real sshd on loopback (scripts/sshd.sh)
//   with a fresh ed25519 key; every piece is torn down at the end.
// - Engine API calls: --calls sequential `GET /_ping`, `GET /containers/json`, `GET /volumes` (podman's
//   /version takes ~190 ms of its own, which would hide the transport), through the
//   engine client berth uses (dist/engine/engine-client.js) on engine a's unix socket, and through an
//   SSH connection (dist/ssh/connection.js, one reused connection, a channel per HTTP connection)
//   to the same socket. Prints calls/s of each and the ratio.
// - Volume copy: berth's copyVolume (dist/engine/volume-copy.js: archive stream a → b through
//   never-started helpers, then the listings that verify it) of one --mib MiB volume of mixed
//   files from engine a to engine b, with both engines reached locally, and with both reached
//   over SSH (one connection per engine, as a migration between two SSH servers has), and from SSH
//   to local. Each round starts with another mode, copies are kept until the end (deleting one
//   slows the next on ext4); the median of each mode is reported, and its ratio to local.
// Goal (issue: servers over SSH): copy over SSH ≥ 0.8× local.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ENGINES = path.join(ROOT, 'scripts', 'engines.sh');
const SSHD = path.join(ROOT, 'scripts', 'sshd.sh');
const IMAGE = 'localhost/berth-busybox:latest';
const { EngineClient } = await import(path.join(ROOT, 'dist/engine/engine-client.js'));
const { SshConnection } = await import(path.join(ROOT, 'dist/ssh/connection.js'));
const { inspectPrivateKey } = await import(path.join(ROOT, 'dist/ssh/key-material.js'));
const { copyVolume } = await import(path.join(ROOT, 'dist/engine/volume-copy.js'));

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const MIB = opt('mib', 512);
const CALLS = opt('calls', 300);
const ROUNDS = opt('rounds', 3);
const log = (...a) => console.error('[bench:ssh]', ...a);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bssh-'));
const engDir = path.join(dir, 'eng');
const sshDir = path.join(dir, 'sshd');
const podman = (e, args) => execFileSync('bash', [ENGINES, 'podman', e, engDir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
const clients = [];
const conns = [];

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

try {
  log('starting engines and sshd');
  execFileSync('bash', [ENGINES, 'up', engDir], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ENGINES_QUIET: '1' } });
  const port = await freePort();
  execFileSync('bash', [SSHD, 'up', sshDir, String(port)], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'key')]);
  fs.copyFileSync(path.join(dir, 'key.pub'), path.join(sshDir, 'authorized_keys', 'root'));
  const key = await inspectPrivateKey(fs.readFileSync(path.join(dir, 'key'), 'utf8'));
  const hostKey = execFileSync('bash', [SSHD, 'hostkey', sshDir], { encoding: 'utf8' }).trim();
  const sockets = { a: path.join(engDir, 'a/engine.sock'), b: path.join(engDir, 'b/engine.sock') };

  const local = (e) => {
    const c = new EngineClient({ endpoint: `unix://${sockets[e]}` });
    clients.push(c);
    return c;
  };
  const overSsh = (e) => {
    const ssh = new SshConnection({ host: '127.0.0.1', port, username: 'root', privateKey: key.forSsh2, keyFingerprint: key.fingerprint, hostKey });
    conns.push(ssh);
    const c = new EngineClient({ endpoint: `ssh://root@127.0.0.1:${port}${sockets[e]}`, dial: (signal) => ssh.openSocket(sockets[e], signal) });
    clients.push(c);
    return c;
  };

  // ---- Engine API calls
  const calls = async (client) => {
    await client.listVolumes(); // connect and negotiate outside the timing
    const t = performance.now();
    for (let i = 0; i < CALLS; i++) {
      await client.ping();
      await client.listContainers();
      await client.listVolumes();
    }
    return (3 * CALLS) / ((performance.now() - t) / 1000);
  };
  const apiLocal = [];
  const apiSsh = [];
  for (let r = 0; r < ROUNDS; r++) {
    apiLocal.push(await calls(local('a')));
    apiSsh.push(await calls(overSsh('a')));
  }

  // ---- Volume copy
  log(`filling a ${MIB} MiB volume on engine a`);
  podman('a', ['volume', 'create', 'bench-src']);
  podman('a', [
    'run',
    '--rm',
    '--network',
    'none',
    '-v',
    'bench-src:/data',
    IMAGE,
    'sh',
    '-c',
    `cd /data && i=0; while [ $i -lt ${Math.floor(MIB / 16)} ]; do dd if=/dev/urandom of=big$i.bin bs=1048576 count=8 2>/dev/null; i=$((i+1)); done; ` +
      `mkdir m && i=0; while [ $i -lt ${MIB * 2} ]; do dd if=/dev/urandom of=m/f$i bs=131072 count=1 2>/dev/null; i=$((i+1)); done; ` +
      `mkdir s && i=0; while [ $i -lt 2000 ]; do head -c $((i % 61 * 1000 + 1)) /dev/urandom > s/f$i; i=$((i+1)); done`,
  ]);
  const copyLocal = [];
  const copySsh = [];
  const copyMixed = [];
  const sshToLocal = (e) => (e === 'a' ? overSsh('a') : local('b'));
  const modes = [
    ['local', local, copyLocal],
    ['ssh', overSsh, copySsh],
    ['ssh-to-local', sshToLocal, copyMixed],
  ];
  let bytes = 0;
  const made = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Each round starts with another mode, and no volume is removed until the end: on ext4, files
    // created within seconds of many deletions are slower (bench/migrate saw tar | tar 4.4 s → 9.9 s).
    for (let k = 0; k < modes.length; k++) {
      const [mode, make, out] = modes[(r + k) % modes.length];
      const to = `bench-dst-${mode}-${r}`;
      made.push(to);
      execFileSync('sync');
      const t = performance.now();
      const res = await copyVolume({ from: { engine: make('a'), volume: 'bench-src' }, to: { engine: make('b'), volume: to }, helperImage: IMAGE });
      const ms = performance.now() - t;
      bytes = res.bytes;
      out.push(res.bytes / 1e6 / (ms / 1000));
      log(`round ${r + 1} ${mode}: ${(ms / 1000).toFixed(2)} s`);
    }
  }
  for (const v of made) podman('b', ['volume', 'rm', '-f', v]);

  const f = (x) => x.toFixed(0);
  console.log(`bench/ssh — same two podman engines, local unix socket vs SSH (sshd on loopback), ${ROUNDS} alternating rounds, medians`);
  console.log(`Engine API calls (${3 * CALLS} sequential GETs): local ${f(median(apiLocal))}/s, SSH ${f(median(apiSsh))}/s, SSH/local ${(median(apiSsh) / median(apiLocal)).toFixed(2)}x`);
  console.log(
    `Volume copy (${(bytes / 1048576).toFixed(0)} MiB of files, verified): local ${f(median(copyLocal))} MB/s, SSH→SSH ${f(median(copySsh))} MB/s, SSH/local ${(median(copySsh) / median(copyLocal)).toFixed(2)}x (goal ≥ 0.80x); SSH→local ${f(median(copyMixed))} MB/s, ${(median(copyMixed) / median(copyLocal)).toFixed(2)}x`,
  );
} finally {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const s of conns) s.close();
  try {
    execFileSync('bash', [SSHD, 'down', sshDir], { stdio: 'ignore' });
    execFileSync('bash', [ENGINES, 'down', engDir], { stdio: 'ignore' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
