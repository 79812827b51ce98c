// MCP benchmark: berth against a bare SDK v2 server, in one run (numbers: bench/README.md).
//
//   npm run build && node bench/mcp/run.mjs [--duration 3] [--rounds 3] [--concurrency 16]
//                                         [--spawns 10] [--rtt 300] [--only http|stdio]
//                                         [--eras modern,legacy] [--profile DIR] [--json FILE]
//                                         [--candidate OTHER/dist/cli.js]
//
// HTTP: `tools/call get_current_team` as raw JSON-RPC POSTs (undici, N in flight, fixed duration)
// against a real `berth serve` (child process: real token auth, real SQLite store, rate limiter on
// with a budget the run cannot exhaust) and against bench/mcp/bare-server.mjs (child process: the
// SDK's documented createMcpHandler + toNodeHandler server whose one tool returns a constant).
// Both eras: modern 2026-07-28 (JSON answer) and legacy 2025-11-25 (what v1 clients send; the
// SDK's stateless fallback answers as SSE). Same client loop, same request bytes for both servers.
//
// stdio (dist/bundle/cli.js, and dist/cli.js for comparison): spawn → first tool result (initialize → initialized + tools/call for the legacy era;
// a bare tools/call with the _meta envelope for the modern one), median of --spawns runs, then
// --rtt sequential round trips on the same process (p50/p99). Baselines: the bare SDK server on
// stdio (serveStdio) and a 10-line node script that answers one JSON-RPC line (Node's own floor).
// Each spawn runs under GNU time when /usr/bin/time exists: the whole process's CPU, and berth's
// ratio to the bare v1 server paired round by round (issue 28's cold-start measure).
//
// --profile DIR starts both HTTP servers with --cpu-prof (MCP targets only; modern era unless
// --eras says otherwise) and prints where the CPU time went (bench/mcp/profile-summary.mjs).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { cpuMs } from '../../scripts/lib/proc.mjs';
import { startServer } from '../../scripts/lib/start-server.mjs';
import { Pool } from 'undici';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// The shipped `berth` command (package.json bin) is the esbuild bundle of dist/cli.js; the
// unbundled entry is measured next to it on stdio, where module loading dominates start-up.
const CLI = path.join(ROOT, 'dist', 'bundle', 'cli.js');
const UNBUNDLED_CLI = path.join(ROOT, 'dist', 'cli.js');
const BARE = path.join(ROOT, 'bench', 'mcp', 'bare-server.mjs');
const BARE_V1 = path.join(ROOT, 'bench', 'mcp', 'bare-v1-server.mjs');

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const DURATION_MS = Number(opt('duration', 3)) * 1000;
const ROUNDS = Number(opt('rounds', 3));
const CONCURRENCY = Number(opt('concurrency', 16));
const SPAWNS = Number(opt('spawns', 10));
const RTT_COUNT = Number(opt('rtt', 300));
const ONLY = opt('only', 'all');
const PROFILE_DIR = opt('profile', undefined);
const JSON_OUT = opt('json', undefined);
/** Another build of berth (its dist/cli.js) measured next to this one: A/B for a src change. */
const CANDIDATE = opt('candidate', undefined);
const ERA_LIST = opt('eras', PROFILE_DIR ? 'modern' : 'modern,legacy').split(',');

const BIG_LIMIT = '1000000000';
const log = (...a) => console.error('[bench]', ...a);
function median(xs) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
function quantile(xs, q) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

// ---------------------------------------------------------------------------------------------
// Processes

function runOnce(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited ${code}: ${err}`))));
  });
}

const berthEnv = (extra = {}) => ({
  ...process.env,
  LOG_LEVEL: 'warn',
  API_RATE_LIMIT: BIG_LIMIT,
  HOST: '127.0.0.1',
  MCP_ALLOWED_ORIGINS: '',
  MCP_ALLOWED_HOSTS: '',
  REDIS_URL: '',
  ...extra,
});

// ---------------------------------------------------------------------------------------------
// HTTP

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'berth-bench', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const ERAS = {
  modern: {
    title: 'modern 2026-07-28 (JSON answers)',
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'get_current_team' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_current_team', arguments: {}, _meta: META } }),
  },
  legacy: {
    title: 'legacy 2025-11-25 (stateless fallback, SSE answers)',
    headers: { 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_current_team', arguments: {} } }),
  },
};

/** The request each target gets, and how its answer is recognised as a success. */
function requestFor(target, token, era) {
  if (target.kind === 'rest') {
    return { method: 'GET', headers: { authorization: `Bearer ${token}` }, body: undefined, ok: (text) => text.includes('"name"') };
  }
  if (target.kind === 'floor') return { method: 'POST', headers: { 'content-type': 'application/json' }, body: ERAS[era].body, ok: () => true };
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...ERAS[era].headers },
    body: ERAS[era].body,
    ok: (text) => text.includes('"structuredContent"') && !text.includes('"isError":true'),
  };
}

/** N workers sending back to back for `ms`; every answer is read whole and checked. */
async function load(target, token, era, ms) {
  const u = new URL(target.url);
  const pool = new Pool(u.origin, { connections: CONCURRENCY, pipelining: 1 });
  const req = requestFor(target, token, era);
  const latencies = [];
  let ok = 0;
  let errors = 0;
  let firstError;
  const end = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      try {
        const r = await pool.request({ path: u.pathname, method: req.method, headers: req.headers, body: req.body });
        const text = await r.body.text();
        if (r.statusCode === 200 && req.ok(text)) ok++;
        else {
          errors++;
          firstError ??= `${r.statusCode} ${text.slice(0, 300)}`;
        }
      } catch (e) {
        errors++;
        firstError ??= String(e);
      }
      latencies.push(performance.now() - t);
    }
  };
  const cpu0 = cpuMs(target.pid);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = performance.now() - t0;
  const cpu1 = cpuMs(target.pid);
  await pool.close();
  const cpuUsPerCall = cpu0 !== null && cpu1 !== null && ok + errors ? ((cpu1 - cpu0) * 1000) / (ok + errors) : NaN;
  return { rps: ok / (elapsed / 1000), ok, errors, firstError, p50: median(latencies), p99: quantile(latencies, 0.99), cpuUsPerCall };
}

/** A node:http server that answers every request with a fixed JSON body: the floor of this machine. */
const FLOOR_HTTP = `
const http = require('node:http');
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} });
const s = http.createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(body); }); });
s.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port + '/'));
process.once('SIGTERM', () => { s.closeAllConnections(); s.close(() => process.exit(0)); });
`;

async function httpBench(token, berthDataDir) {
  const profArgs = (name) => (PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', path.join(PROFILE_DIR, name)] : []);
  const berth = await startServer({
    label: 'berth',
    args: [...profArgs('berth'), CLI, 'serve', '--port', '0', '--data', berthDataDir],
    env: berthEnv(),
    ready: /^berth: listening on (\S+)$/m,
    cwd: ROOT,
  });
  const bare = await startServer({ label: 'bare', args: [...profArgs('bare'), BARE, 'http'], env: process.env, ready: /^listening on (\S+)$/m, cwd: ROOT });
  const floor = await startServer({ label: 'floor', args: ['-e', FLOOR_HTTP], env: process.env, ready: /^listening on (\S+)$/m, cwd: ROOT });
  // The candidate gets its own copy of the store: two processes on one SQLite file would contend.
  const candidateData = `${berthDataDir}-candidate`;
  if (CANDIDATE) fs.cpSync(berthDataDir, candidateData, { recursive: true });
  const candidate = CANDIDATE
    ? await startServer({
        label: 'candidate',
        args: [...profArgs('candidate'), CANDIDATE, 'serve', '--port', '0', '--data', candidateData],
        env: berthEnv(),
        ready: /^berth: listening on (\S+)$/m,
        cwd: ROOT,
      })
    : null;
  const mcpTargets = [
    { name: 'berth', kind: 'mcp', url: `${berth.url}/mcp`, pid: berth.pid },
    ...(candidate ? [{ name: 'berth candidate', kind: 'mcp', url: `${candidate.url}/mcp`, pid: candidate.pid }] : []),
    { name: 'bare SDK', kind: 'mcp', url: bare.url, pid: bare.pid },
  ];
  // References for the modern pass: the same team over berth's REST door (auth, limits, store and
  // Fastify, no MCP), and Node's own HTTP floor on this machine.
  const references = [
    { name: 'berth REST GET /api/v1/teams/current', kind: 'rest', url: `${berth.url}/api/v1/teams/current`, pid: berth.pid },
    { name: 'node:http fixed answer (floor)', kind: 'floor', url: floor.url, pid: floor.pid },
  ];
  const results = {};
  try {
    for (const era of ERA_LIST) {
      const targets = era === 'modern' && !PROFILE_DIR ? [...mcpTargets, ...references] : mcpTargets;
      results[era] = {};
      for (const t of targets) {
        const w = await load(t, token, era, 1000); // warm-up (JIT, statement cache, pools)
        if (w.errors && !w.ok) throw new Error(`${t.name} ${era}: every warm-up call failed: ${w.firstError}`);
      }
      // Alternate the servers round by round, so drift on this machine hits all of them alike.
      const rounds = Object.fromEntries(targets.map((t) => [t.name, []]));
      for (let i = 0; i < ROUNDS; i++) {
        for (const t of targets) {
          const r = await load(t, token, era, DURATION_MS);
          rounds[t.name].push(r);
          log(
            `${era} ${t.name} round ${i + 1}: ${r.rps.toFixed(0)} calls/s, p50 ${r.p50.toFixed(2)} ms, ${r.cpuUsPerCall.toFixed(0)} µs CPU/call, errors ${r.errors}${r.firstError ? ` (${r.firstError})` : ''}`,
          );
        }
      }
      for (const [name, rs] of Object.entries(rounds)) {
        results[era][name] = {
          rps: median(rs.map((r) => r.rps)),
          best: Math.max(...rs.map((r) => r.rps)),
          p50: median(rs.map((r) => r.p50)),
          p99: median(rs.map((r) => r.p99)),
          cpuUsPerCall: median(rs.map((r) => r.cpuUsPerCall)),
          errors: rs.reduce((n, r) => n + r.errors, 0),
          calls: rs.reduce((n, r) => n + r.ok, 0),
        };
      }
      const b = results[era].berth;
      const s = results[era]['bare SDK'];
      results[era].ratios = { rps: b.rps / s.rps, best: b.best / s.best, cpuPerCall: b.cpuUsPerCall / s.cpuUsPerCall };
      const c = results[era]['berth candidate'];
      if (c) results[era].candidateRatios = { rps: c.rps / s.rps, best: c.best / s.best, cpuPerCall: c.cpuUsPerCall / s.cpuUsPerCall };
    }
  } finally {
    await Promise.all([berth.stop(), bare.stop(), floor.stop(), candidate?.stop()]);
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// stdio

const FLOOR_SCRIPT = `
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (l) => { const m = JSON.parse(l); if (m.id !== undefined) process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [], tools: [{ name: 'x', inputSchema: { type: 'object' } }] } }) + '\\n'); });
`;

const INIT = (id) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'berth-bench', version: '1.0.0' } } });
const CALL_LEGACY = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_current_team', arguments: {} } });
const CALL_MODERN = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_current_team', arguments: {}, _meta: META } });
const LIST_LEGACY = (id) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
const LIST_MODERN = (id) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: META } });

/**
 * One spawned stdio server: time to the first tool result (after tools/list, as a client does
 * before it can call anything), then `rtt` sequential round trips. The list's size is kept too.
 */
// The whole process's CPU (user + system, from the kernel when it is reaped), through GNU time
// where it is installed: issue 28 compares cold starts by it, paired with the bare v1 server.
const GNU_TIME = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : null;
const CPU_MARK = 'berth-bench-cpu';

function stdioSession(args, env, era, rtt) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const [cmd, argv] = GNU_TIME ? [GNU_TIME, ['-f', `\n${CPU_MARK} %U %S`, process.execPath, ...args]] : [process.execPath, args];
    const child = spawn(cmd, argv, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
    const call = era === 'modern' ? CALL_MODERN : CALL_LEGACY;
    const pending = new Map();
    const request = (m) => new Promise((res) => (pending.set(m.id, res), send(m)));
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      let m;
      try {
        m = JSON.parse(line);
      } catch {
        return reject(new Error(`non-JSON line on stdout: ${line.slice(0, 200)}`));
      }
      pending.get(m.id)?.(m);
      pending.delete(m.id);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`stdio session timed out: ${stderr}`));
    }, 60_000);
    child.on('error', reject);
    (async () => {
      if (era === 'legacy') {
        const init = await request(INIT(0));
        if (!init.result) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
        send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      }
      const list = await request((era === 'modern' ? LIST_MODERN : LIST_LEGACY)(-1));
      if (!list.result?.tools?.length) throw new Error(`tools/list failed: ${JSON.stringify(list).slice(0, 300)} ${stderr}`);
      const first = await request(call(1));
      const firstMs = performance.now() - t0;
      const listBytes = JSON.stringify(list.result.tools).length;
      if (!first.result || first.result.isError) throw new Error(`first call failed: ${JSON.stringify(first)} ${stderr}`);
      const rtts = [];
      for (let i = 0; i < rtt; i++) {
        const t = performance.now();
        const r = await request(call(2 + i));
        rtts.push(performance.now() - t);
        if (!r.result || r.result.isError) throw new Error(`call failed: ${JSON.stringify(r)}`);
      }
      // The whole process, as a client sees it: closing stdin ends the session, and the process
      // has to go away by itself (issue 28 counts spawn → exit).
      child.stdin.end();
      await new Promise((res) => (child.exitCode !== null || child.signalCode !== null ? res() : child.once('exit', res)));
      const exitMs = performance.now() - t0;
      await new Promise((res) => (child.stderr.readableEnded ? res() : child.stderr.once('end', res)));
      const cpu = new RegExp(`${CPU_MARK} ([\\d.]+) ([\\d.]+)`).exec(stderr);
      return { firstMs, exitMs, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : NaN, rtts, listBytes, listCount: list.result.tools.length };
    })().then(
      (r) => {
        clearTimeout(timer);
        resolve(r);
      },
      (e) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(e);
      },
    );
  });
}

async function stdioBench(token, dataDir) {
  const subjects = [
    { name: 'berth mcp', era: 'legacy', args: [CLI, 'mcp', '--data', dataDir], env: berthEnv({ BERTH_TOKEN: token }) },
    { name: 'berth mcp', era: 'modern', args: [CLI, 'mcp', '--data', dataDir], env: berthEnv({ BERTH_TOKEN: token }) },
    ...['legacy', 'modern'].map((era) => ({ name: 'berth mcp, unbundled dist/cli.js', era, args: [UNBUNDLED_CLI, 'mcp', '--data', dataDir], env: berthEnv({ BERTH_TOKEN: token }) })),
    ...(CANDIDATE ? ['legacy', 'modern'].map((era) => ({ name: 'berth candidate mcp', era, args: [CANDIDATE, 'mcp', '--data', dataDir], env: berthEnv({ BERTH_TOKEN: token }) })) : []),
    { name: 'bare SDK v1 (one tool)', era: 'legacy', args: [BARE_V1], env: process.env },
    { name: 'bare SDK (serveStdio)', era: 'legacy', args: [BARE, 'stdio'], env: process.env },
    { name: 'bare SDK (serveStdio)', era: 'modern', args: [BARE, 'stdio'], env: process.env },
    { name: 'node floor (10-line echo)', era: 'modern', args: ['-e', FLOOR_SCRIPT], env: process.env },
  ];
  const firsts = subjects.map(() => []);
  const exits = subjects.map(() => []);
  const cpus = subjects.map(() => []);
  const rtts = subjects.map(() => []);
  const lists = subjects.map(() => null);
  // Interleaved, so machine noise spreads over every subject; the first round only warms the page cache.
  // The last round only measures round trips (its exit comes after them): it is not counted.
  for (let i = 0; i <= SPAWNS + 1; i++) {
    for (const [k, s] of subjects.entries()) {
      const r = await stdioSession(s.args, s.env, s.era, i === SPAWNS + 1 ? RTT_COUNT : 0);
      if (i > 0 && i <= SPAWNS) firsts[k].push(r.firstMs);
      if (i > 0 && i <= SPAWNS) exits[k].push(r.exitMs);
      if (i > 0 && i <= SPAWNS) cpus[k].push(r.cpuMs);
      rtts[k].push(...r.rtts);
      lists[k] = { tools: r.listCount, bytes: r.listBytes };
    }
  }
  return subjects.map((s, k) => ({
    name: s.name,
    era: s.era,
    spawnToFirstMs: { median: median(firsts[k]), min: Math.min(...firsts[k]), max: Math.max(...firsts[k]) },
    spawnToExitMs: { median: median(exits[k]), min: Math.min(...exits[k]), max: Math.max(...exits[k]) },
    cpuMs: { median: median(cpus[k]), min: Math.min(...cpus[k]), max: Math.max(...cpus[k]), runs: cpus[k] },
    rtt: { p50: median(rtts[k]), p99: quantile(rtts[k], 0.99), count: rtts[k].length },
    list: lists[k],
  }));
}

// ---------------------------------------------------------------------------------------------

const f0 = (n) => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);

async function main() {
  if (!fs.existsSync(CLI) || !fs.existsSync(UNBUNDLED_CLI)) throw new Error('dist/bundle/cli.js or dist/cli.js is missing: run `npm run build` first');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-'));
  const dataDir = path.join(work, 'data');
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}`,
    loadavgBefore: os.loadavg().map((l) => Number(l.toFixed(2))),
    settings: { durationS: DURATION_MS / 1000, rounds: ROUNDS, concurrency: CONCURRENCY, spawns: SPAWNS, rtt: RTT_COUNT },
  };
  try {
    const token = JSON.parse(await runOnce([CLI, 'init', '--json', '--data', dataDir], berthEnv())).token;
    if (ONLY !== 'stdio') report.http = await httpBench(token, dataDir);
    if (ONLY !== 'http' && !PROFILE_DIR) report.stdio = await stdioBench(token, dataDir);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }

  report.loadavgAfter = os.loadavg().map((l) => Number(l.toFixed(2)));
  const out = [];
  out.push(`berth MCP benchmark — ${report.date.slice(0, 10)}, Node ${report.node}, ${report.cpus}, load average ${report.loadavgBefore[0]} before, ${report.loadavgAfter[0]} after`);
  if (report.http) {
    out.push('');
    out.push(`HTTP tools/call get_current_team: ${CONCURRENCY} in flight, ${DURATION_MS / 1000} s × ${ROUNDS} rounds per server (median round)`);
    out.push(`  ${pad('', 40)}${lpad('calls/s', 9)}${lpad('best', 7)}${lpad('p50 ms', 9)}${lpad('p99 ms', 9)}${lpad('CPU µs/call', 13)}${lpad('errors', 8)}`);
    for (const [era, r] of Object.entries(report.http)) {
      out.push(`  ${ERAS[era].title}`);
      for (const [name, x] of Object.entries(r)) {
        if (name === 'ratios' || name === 'candidateRatios') continue;
        out.push(`    ${pad(name, 38)}${lpad(f0(x.rps), 9)}${lpad(f0(x.best), 7)}${lpad(f2(x.p50), 9)}${lpad(f2(x.p99), 9)}${lpad(f0(x.cpuUsPerCall), 13)}${lpad(x.errors, 8)}`);
      }
      out.push(`    ${pad('ratio berth / bare SDK', 38)}${lpad(f2(r.ratios.rps), 9)}${lpad(f2(r.ratios.best), 7)}${lpad('', 18)}${lpad(f2(r.ratios.cpuPerCall), 13)}`);
      // Issue 28: an MCP call within 2x the same operation over REST (CPU per call, same run).
      const rest = report.http.modern?.['berth REST GET /api/v1/teams/current'];
      if (rest) out.push(`    ${pad('ratio berth MCP / berth REST', 38)}${lpad('', 9 + 7 + 18)}${lpad(f2(r.berth.cpuUsPerCall / rest.cpuUsPerCall), 13)}`);
      if (r.candidateRatios)
        out.push(
          `    ${pad('ratio berth candidate / bare SDK', 38)}${lpad(f2(r.candidateRatios.rps), 9)}${lpad(f2(r.candidateRatios.best), 7)}${lpad('', 18)}${lpad(f2(r.candidateRatios.cpuPerCall), 13)}`,
        );
    }
  }
  if (report.stdio) {
    out.push('');
    out.push(`stdio: spawn → initialize → tools/list → first tool result (median of ${SPAWNS} spawns, min–max), then ${RTT_COUNT} sequential round trips`);
    out.push(
      `  ${pad('', 46)}${lpad('first ms', 10)}${lpad('min–max', 13)}${lpad('exit ms', 9)}${lpad('CPU ms', 8)}${lpad('RTT p50', 10)}${lpad('RTT p99', 10)}${lpad('tools', 7)}${lpad('list KB', 9)}`,
    );
    for (const s of report.stdio) {
      out.push(
        `  ${pad(`${s.name}, ${s.era}`, 46)}${lpad(f0(s.spawnToFirstMs.median), 10)}${lpad(`${f0(s.spawnToFirstMs.min)}–${f0(s.spawnToFirstMs.max)}`, 13)}${lpad(f0(s.spawnToExitMs.median), 9)}${lpad(f0(s.cpuMs.median), 8)}${lpad(f2(s.rtt.p50), 10)}${lpad(f2(s.rtt.p99), 10)}${lpad(s.list.tools, 7)}${lpad((s.list.bytes / 1024).toFixed(1), 9)}`,
      );
    }
    // Issue 28: cold start against a bare SDK v1 server with one tool (the 2025 era: v1 speaks no other).
    const v1 = report.stdio.find((s) => s.name.startsWith('bare SDK v1'));
    const bl = report.stdio.find((s) => s.name === 'berth mcp' && s.era === 'legacy');
    if (v1 && bl) {
      // Paired: the two ran one after the other in every round, so each round's ratio sees the same machine.
      const paired = bl.cpuMs.runs.map((c, i) => c / v1.cpuMs.runs[i]).filter(Number.isFinite);
      const cpu = paired.length
        ? `, whole-process CPU ${f0(bl.cpuMs.median)} / ${f0(v1.cpuMs.median)} ms, paired ratio median ${f2(median(paired))} (${f2(Math.min(...paired))}–${f2(Math.max(...paired))})`
        : '';
      out.push(
        `  ratio berth / bare SDK v1, legacy: spawn→first ${f2(bl.spawnToFirstMs.median / v1.spawnToFirstMs.median)}, spawn→exit ${f2(bl.spawnToExitMs.median / v1.spawnToExitMs.median)}${cpu}`,
      );
    }
    const get = (name, era) => report.stdio.find((s) => s.name.startsWith(name) && !s.name.startsWith('bare SDK v1') && s.era === era);
    for (const era of ['legacy', 'modern']) {
      const b = get('berth', era);
      const s = get('bare', era);
      out.push(`  ratio berth / bare, ${era}: spawn→first ${f2(b.spawnToFirstMs.median / s.spawnToFirstMs.median)}, RTT p50 ${f2(b.rtt.p50 / s.rtt.p50)}`);
      const c = get('berth candidate', era);
      if (c) out.push(`  ratio berth candidate / bare, ${era}: spawn→first ${f2(c.spawnToFirstMs.median / s.spawnToFirstMs.median)}, RTT p50 ${f2(c.rtt.p50 / s.rtt.p50)}`);
    }
  }
  console.log(out.join('\n'));
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(report, null, 2));

  if (PROFILE_DIR) {
    const { summarize } = await import('./profile-summary.mjs');
    for (const name of ['berth', 'candidate', 'bare']) {
      const dir = path.join(PROFILE_DIR, name);
      if (!fs.existsSync(dir)) continue;
      const file = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => path.join(dir, f))
        .sort()
        .at(-1);
      if (file) console.log(`\nCPU profile of ${name} (${file}):\n${summarize(file)}`);
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
