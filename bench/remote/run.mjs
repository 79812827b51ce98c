// Remote-mode benchmark: tool-call latency of `berth mcp --api-url` (the tools over HTTP to a
// berth on loopback) against `berth mcp --data` (the in-process core), in the same run.
//
//   npm run build && node bench/remote/run.mjs [--calls 400] [--rounds 5] [--tool get_current_team] [--json FILE]
//
// One `berth serve` child process (real token auth, real SQLite store, rate limiter on with a
// budget the run cannot exhaust) is the upstream. Two stdio MCP servers are driven by the SDK v2
// client (legacy era, one process each, kept for the whole run): local (`mcp --data DIR`, same
// data directory) and remote (`mcp --api-url URL`). Calls are sequential (one in flight), in
// alternating rounds so both modes see the same machine conditions. Also measured: the bare
// HTTP round trip the remote mode adds (undici, keep-alive, GET /api/v1/teams/current), as the
// floor of what the extra hop costs.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../scripts/lib/start-server.mjs';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Pool } from 'undici';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'dist', 'bundle', 'cli.js');

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const CALLS = Number(opt('calls', 400));
const ROUNDS = Number(opt('rounds', 5));
const TOOL = opt('tool', 'get_current_team');
const JSON_OUT = opt('json', undefined);
const log = (...a) => console.error('[bench]', ...a);

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const ms = (ns) => Number(ns) / 1e6;

const startServe = (dataDir) =>
  startServer({
    label: 'berth serve',
    args: [CLI, 'serve', '--port', '0', '--data', dataDir],
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', API_RATE_LIMIT: '1000000000' },
  });

async function mcpClient(args, token) {
  const client = new Client({ name: 'bench-remote', version: '1' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', ...args],
      env: { PATH: process.env.PATH, BERTH_TOKEN: token, LOG_LEVEL: 'warn', API_RATE_LIMIT: '1000000000' },
      stderr: 'inherit',
    }),
  );
  return client;
}

async function timeCalls(fn, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    out.push(ms(process.hrtime.bigint() - t0));
  }
  return out;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-remote-'));
let serve;
const clients = [];
try {
  const init = JSON.parse(execFileSync(process.execPath, [CLI, 'init', '--data', dataDir, '--json'], { encoding: 'utf8' }));
  const token = init.token;
  serve = await startServe(dataDir);
  const local = await mcpClient(['--data', dataDir], token);
  const remote = await mcpClient(['--api-url', serve.url], token);
  clients.push(local, remote);
  const pool = new Pool(serve.url, { connections: 1, keepAliveTimeout: 30_000 });
  const call = (c) => async () => {
    const r = await c.callTool({ name: TOOL, arguments: {} });
    if (r.isError) throw new Error(`${TOOL} failed: ${JSON.stringify(r.content)}`);
  };
  const http = async () => {
    const r = await pool.request({ method: 'GET', path: '/api/v1/teams/current', headers: { authorization: `Bearer ${token}` } });
    await r.body.text();
    if (r.statusCode !== 200) throw new Error(`HTTP ${r.statusCode}`);
  };

  log(`warm-up, then ${ROUNDS} rounds × ${CALLS / ROUNDS} sequential ${TOOL} calls per mode`);
  for (const fn of [call(local), call(remote), http]) await timeCalls(fn, 100);
  const samples = { local: [], remote: [], http: [] };
  const per = Math.ceil(CALLS / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order so neither mode always runs right after the other.
    const order = r % 2 ? ['remote', 'local', 'http'] : ['local', 'remote', 'http'];
    for (const mode of order) {
      const fn = mode === 'local' ? call(local) : mode === 'remote' ? call(remote) : http;
      samples[mode].push(...(await timeCalls(fn, per)));
    }
  }
  await pool.close();

  const row = (label, xs) => ({ label, n: xs.length, p50: quantile(xs, 0.5), p95: quantile(xs, 0.95), p99: quantile(xs, 0.99) });
  const rows = [row(`local  (mcp --data, in-process core)`, samples.local), row(`remote (mcp --api-url, loopback HTTP)`, samples.remote), row(`bare HTTP GET /api/v1/teams/current`, samples.http)];
  const f = (x) => x.toFixed(3).padStart(8);
  console.log(`\n${TOOL}: tool-call latency, ms (sequential, ${CALLS} calls per mode, Node ${process.version}, ${os.cpus().length} CPUs)\n`);
  console.log(`${'mode'.padEnd(40)} ${'n'.padStart(5)} ${'p50'.padStart(8)} ${'p95'.padStart(8)} ${'p99'.padStart(8)}`);
  for (const r of rows) console.log(`${r.label.padEnd(40)} ${String(r.n).padStart(5)} ${f(r.p50)} ${f(r.p95)} ${f(r.p99)}`);
  const [l, rm, h] = rows;
  const ratio = { p50: rm.p50 / l.p50, p95: rm.p95 / l.p95 };
  console.log(`\nremote / local: p50 ×${ratio.p50.toFixed(2)}, p95 ×${ratio.p95.toFixed(2)}; remote − local at p50: ${(rm.p50 - l.p50).toFixed(3)} ms (bare HTTP hop p50: ${h.p50.toFixed(3)} ms)`);
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ tool: TOOL, calls: CALLS, rows, ratio }, null, 2));
} finally {
  for (const c of clients) await c.close().catch(() => {});
  await serve?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
