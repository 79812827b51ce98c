// bench/outage: how fast berth says "unavailable" when Redis or PostgreSQL is down (issue 28,
// item 2: 503 with Retry-After within 100 ms, /api/ready within 100 ms), against a healthy
// request in the same run. One berth process (dist/bundle/cli.js serve) on a PostgreSQL store
// (scripts/postgres.sh, a cluster in a temp dir) with REDIS_URL (a redis-server on loopback).
// Phases: healthy; Redis stopped; Redis back; Redis frozen (SIGSTOP); PostgreSQL stopped. Each
// phase sends N sequential requests of each kind and prints median / p95 / max latency and the
// statuses seen. The frozen phase first runs 12 concurrent clients from the moment of the freeze
// for 3 timeouts (issue 40: every answer a 503 within 1.5 s, the timeout paid once) and prints
// the maximum against BERTH_REDIS_TIMEOUT_MS.
// Usage: npm run build && node bench/outage/run.mjs [requests=200] [--cli OTHER/dist/bundle/cli.js]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startServer } from '../../scripts/lib/start-server.mjs';

const args = process.argv.slice(2);
const cliAt = args.indexOf('--cli');
const cli = cliAt >= 0 ? path.resolve(args.splice(cliAt, 2)[1]) : path.resolve(import.meta.dirname, '../../dist/bundle/cli.js');
const n = Number(args[0] ?? 200);
const timeoutMs = Number(process.env.BERTH_REDIS_TIMEOUT_MS ?? 1000);
const pgScript = path.resolve(import.meta.dirname, '../../scripts/postgres.sh');

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function startRedis(port) {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => (c.end(), resolve(true))).on('error', () => resolve(false));
    });
    if (up) return proc;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('redis-server did not start');
}

async function timed(url, token) {
  const t0 = process.hrtime.bigint();
  const r = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  await r.arrayBuffer();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, status: r.status, retryAfter: r.headers.get('retry-after') };
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), p95: q(0.95), max: s[s.length - 1] };
};

async function phase(name, base, token) {
  const out = [];
  for (const [what, url, tok] of [
    ['GET /api/v1/teams/current', `${base}/api/v1/teams/current`, token],
    ['GET /api/ready', `${base}/api/ready`, undefined],
  ]) {
    const runs = [];
    for (let i = 0; i < n; i++) runs.push(await timed(url, tok));
    const st = stats(runs.map((r) => r.ms));
    const statuses = [...new Set(runs.map((r) => `${r.status}${r.retryAfter ? ` (Retry-After ${r.retryAfter})` : ''}`))].join(', ');
    out.push({ phase: name, request: what, statuses, median_ms: st.median.toFixed(2), p95_ms: st.p95.toFixed(2), max_ms: st.max.toFixed(2) });
  }
  return out;
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-outage-'));
const cluster = path.join(root, 'cluster');
const pgUrl = execFileSync('bash', [pgScript, 'up', cluster, String(await freePort())], { encoding: 'utf8' })
  .trim()
  .split('\n')
  .pop();
const redisPort = await freePort();
let redis = await startRedis(redisPort);
const env = { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: pgUrl, REDIS_URL: `redis://127.0.0.1:${redisPort}`, API_RATE_LIMIT: '1000000', BERTH_REDIS_TIMEOUT_MS: String(timeoutMs) };
const dataDir = path.join(root, 'data');
const init = JSON.parse(execFileSync(process.execPath, [cli, 'init', '--json', '--data', dataDir], { encoding: 'utf8', env }));
const berth = await startServer({ args: [cli, 'serve', '--port', '0', '--data', dataDir], env });
const rows = [];
let frozen;
const waitFor = async (cond) => {
  for (let i = 0; i < 400 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 25));
};
try {
  // Warm-up, then the healthy baseline.
  for (let i = 0; i < 50; i++) await timed(`${berth.url}/api/v1/teams/current`, init.token);
  rows.push(...(await phase('healthy', berth.url, init.token)));

  redis.kill();
  await waitFor(async () => (await timed(`${berth.url}/api/ready`)).status === 503);
  rows.push(...(await phase('Redis down', berth.url, init.token)));

  redis = await startRedis(redisPort);
  await waitFor(async () => (await timed(`${berth.url}/api/ready`)).status === 200);
  rows.push(...(await phase('Redis back', berth.url, init.token)));

  // Frozen: connected, not answering. Clients already sending when it froze race the first timeout.
  redis.kill('SIGSTOP');
  const t0 = performance.now();
  const racing = [];
  await Promise.all(
    Array.from({ length: 12 }, async (_, c) => {
      while (performance.now() - t0 < 3 * timeoutMs) {
        const r = await timed(c % 2 ? `${berth.url}/api/ready` : `${berth.url}/api/v1/teams/current`, c % 2 ? undefined : init.token);
        racing.push({ ...r, at: performance.now() - t0 - r.ms });
      }
    }),
  );
  rows.push(...(await phase('Redis frozen', berth.url, init.token)));
  redis.kill('SIGCONT');
  await waitFor(async () => (await timed(`${berth.url}/api/ready`)).status === 200);
  frozen = {
    requests: racing.length,
    statuses: [...new Set(racing.map((r) => `${r.status}${r.retryAfter ? ` (Retry-After ${r.retryAfter})` : ''}`))].join(', '),
    maxMs: Math.max(...racing.map((r) => r.ms)),
    slowOnes: racing.filter((r) => r.ms > timeoutMs / 2).length,
    lastSlowAt: Math.max(0, ...racing.filter((r) => r.ms > timeoutMs / 2).map((r) => r.at)),
  };

  execFileSync('bash', [pgScript, 'stop', cluster], { stdio: 'ignore' });
  rows.push(...(await phase('PostgreSQL down', berth.url, init.token)));
} finally {
  await berth.stop();
  redis.kill();
  execFileSync('bash', [pgScript, 'down', cluster], { stdio: 'ignore' });
  fs.rmSync(root, { recursive: true, force: true });
}
console.table(rows);
const healthy = Number(rows.find((r) => r.phase === 'healthy' && r.request.startsWith('GET /api/v1')).median_ms);
if (frozen)
  console.log(
    `Redis frozen, 12 concurrent clients for ${3 * timeoutMs} ms: ${frozen.requests} requests, ${frozen.statuses}; ` +
      `max ${frozen.maxMs.toFixed(0)} ms = ${(frozen.maxMs / timeoutMs).toFixed(2)}× BERTH_REDIS_TIMEOUT_MS (${timeoutMs} ms); ` +
      `${frozen.slowOnes} took over half the timeout, the last of them sent ${frozen.lastSlowAt.toFixed(0)} ms after the freeze`,
  );
for (const r of rows.filter((x) => x.phase.endsWith('down') || x.phase.endsWith('frozen')))
  console.log(`${r.phase}, ${r.request}: median ${r.median_ms} ms = ${(Number(r.median_ms) / healthy).toFixed(2)}× a healthy request; max ${r.max_ms} ms`);
