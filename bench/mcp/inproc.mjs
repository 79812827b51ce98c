// Server-side cost of one MCP tool call, without a network or a client competing for the CPU:
// requests are injected into the servers' request handlers (light-my-request, the injector
// Fastify itself uses) one after the other, and the process's CPU time is divided by the count.
// Far steadier than calls/s on a shared machine; use it to A/B a src change.
//
//   npm run build && node bench/mcp/inproc.mjs [--n 3000] [--candidate OTHER/dist]
//
// Targets: berth's /mcp (the Fastify app of `berth serve`, real token auth, real store) in both
// eras, berth's REST GET /api/v1/teams/current (the same team without MCP), the bare SDK server of
// bench/mcp/bare-server.mjs, and — with --candidate — the same berth targets from another build.
// Also: buildMcpServer() alone, for 1 tool and for every tool (what a request pays per server).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { bareNodeHandler } from './bare-server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// Fastify's own injector, reached through Fastify (not a direct dependency, so maybe not hoisted).
const require = createRequire(import.meta.url);
const inject = createRequire(require.resolve('fastify'))('light-my-request');
const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const N = Number(opt('n', 3000));
const CANDIDATE = opt('candidate', undefined);

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'berth-bench', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const call = (meta) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_current_team', arguments: {}, ...(meta ? { _meta: META } : {}) } });
const mcpRequest = (token, era) => ({
  method: 'POST',
  url: '/mcp',
  headers: {
    host: '127.0.0.1',
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    ...(era === 'modern' ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'get_current_team' } : { 'mcp-protocol-version': '2025-11-25' }),
  },
  payload: call(era === 'modern'),
});

/** Sequential calls; CPU µs and wall µs per call, after a warm-up. */
async function measure(label, once, check) {
  for (let i = 0; i < Math.min(500, N); i++) await once();
  const first = await once();
  if (!check(first)) throw new Error(`${label}: unexpected answer ${first.statusCode} ${String(first.payload).slice(0, 300)}`);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await once();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { label, cpuUs: (cpu.user + cpu.system) / N, wallUs: (wall * 1000) / N };
}

const okMcp = (r) => r.statusCode === 200 && r.payload.includes('"structuredContent"') && !r.payload.includes('"isError":true');

async function berthTargets(distDir, dataDir, name, overrides = {}) {
  const { loadConfig } = await import(pathToFileURL(path.join(distDir, 'config', 'config.js')).href);
  const { startServer } = await import(pathToFileURL(path.join(distDir, 'serve.js')).href);
  const config = loadConfig(
    { ...process.env, LOG_LEVEL: 'silent', API_RATE_LIMIT: '1000000000', REDIS_URL: '', MCP_ALLOWED_ORIGINS: '', MCP_ALLOWED_HOSTS: '' },
    { dataDir, host: '127.0.0.1', port: 0, ...overrides },
  );
  const server = await startServer(config, () => {});
  return { name, server, distDir };
}

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-inproc-'));
  const results = [];
  const servers = [];
  try {
    const dataDir = path.join(work, 'data');
    const init = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'cli.js'), 'init', '--json', '--data', dataDir], { encoding: 'utf8' });
    if (init.status !== 0) throw new Error(`berth init failed: ${init.stderr}`);
    const token = JSON.parse(init.stdout).token;

    const builds = [await berthTargets(path.join(ROOT, 'dist'), dataDir, 'berth')];
    // The same build with every tools/call through the SDK (config.mcpFastCalls false): what the fast path saves.
    const sdkPath = await berthTargets(path.join(ROOT, 'dist'), dataDir, 'berth, SDK path', { mcpFastCalls: false });
    servers.push(sdkPath.server);
    if (CANDIDATE) {
      const candData = path.join(work, 'data-candidate');
      fs.cpSync(dataDir, candData, { recursive: true });
      builds.push(await berthTargets(path.resolve(CANDIDATE), candData, 'candidate'));
    }
    servers.push(...builds.map((b) => b.server));
    const bare = bareNodeHandler();

    // Interleave the targets twice, so a slow spell on this machine does not land on one alone.
    const targets = [];
    for (const b of builds) {
      for (const era of ['modern', 'legacy']) targets.push({ label: `${b.name} /mcp ${era}`, once: () => b.server.app.inject(mcpRequest(token, era)), check: okMcp });
      targets.push({
        label: `${b.name} REST GET /api/v1/teams/current`,
        once: () => b.server.app.inject({ method: 'GET', url: '/api/v1/teams/current', headers: { host: '127.0.0.1', authorization: `Bearer ${token}` } }),
        check: (r) => r.statusCode === 200,
      });
    }
    for (const era of ['modern', 'legacy']) targets.push({ label: `berth, SDK path /mcp ${era}`, once: () => sdkPath.server.app.inject(mcpRequest(token, era)), check: okMcp });
    for (const era of ['modern', 'legacy']) targets.push({ label: `bare SDK /mcp ${era}`, once: () => inject(bare, mcpRequest(token, era)), check: okMcp });
    const runs = new Map();
    for (let round = 0; round < 2; round++) {
      for (const t of targets) {
        const r = await measure(t.label, t.once, t.check);
        runs.set(t.label, [...(runs.get(t.label) ?? []), r]);
      }
    }
    for (const [label, rs] of runs) results.push({ label, cpuUs: Math.min(...rs.map((r) => r.cpuUs)), wallUs: Math.min(...rs.map((r) => r.wallUs)) });

    // What building the per-request server costs, by number of tools.
    for (const b of builds) {
      const { buildMcpServer } = await import(pathToFileURL(path.join(b.distDir, 'server', 'mcp-server.js')).href);
      const { tools } = await import(pathToFileURL(path.join(b.distDir, 'tools', 'index.js')).href);
      const logger = { error() {}, debug() {}, info() {}, warn() {} };
      for (const n of [1, tools.length]) {
        const reachable = tools.slice(0, n);
        const session = { core: null, logger, catalogue: { reachable, listed: new Set(reachable.map((t) => t.name)), dynamic: false }, callerFor: async () => null };
        for (let i = 0; i < 300; i++) buildMcpServer(session);
        const cpu0 = process.cpuUsage();
        for (let i = 0; i < N; i++) buildMcpServer(session);
        const cpu = process.cpuUsage(cpu0);
        results.push({ label: `${b.name} buildMcpServer(${n} tool${n === 1 ? '' : 's'})`, cpuUs: (cpu.user + cpu.system) / N });
      }
    }
  } finally {
    for (const s of servers) await s.close();
    fs.rmSync(work, { recursive: true, force: true });
  }

  const load = os.loadavg()[0].toFixed(2);
  console.log(`server-side cost per call, ${N} sequential injected calls per target (best of 2), Node ${process.version}, load average ${load}`);
  console.log(`  ${''.padEnd(46)}${'CPU µs'.padStart(9)}${'wall µs'.padStart(9)}`);
  for (const r of results) console.log(`  ${r.label.padEnd(46)}${r.cpuUs.toFixed(0).padStart(9)}${r.wallUs === undefined ? '' : r.wallUs.toFixed(0).padStart(9)}`);
  // Issue 28's goal: an MCP call within 2x the same operation over REST (CPU per call, same run).
  const cpu = (label) => results.find((r) => r.label === label)?.cpuUs;
  for (const name of ['berth', 'candidate']) {
    const rest = cpu(`${name} REST GET /api/v1/teams/current`);
    if (rest === undefined) continue;
    const ratios = ['modern', 'legacy'].map((era) => `${era} ${(cpu(`${name} /mcp ${era}`) / rest).toFixed(2)}`);
    console.log(`  ratio ${name} MCP / REST (CPU per call): ${ratios.join(', ')}`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
