#!/usr/bin/env node
// Runs the official MCP conformance suite and the MCP Inspector CLI against a real berth, and
// compares the results with test/conformance-baseline.json.
//
//   node scripts/mcp-conformance.mjs [--no-build] [--json FILE | --quiet] [--keep] [--cli OTHER/dist/bundle/cli.js]
//
// What it does, in order:
//  1. installs the tools (scripts/mcp-conformance/: the suite, the Inspector and Node 22, pinned
//     by that directory's package-lock.json) when they are missing: about 330 MB, ~35 s once;
//  2. builds berth (`npm run build`) unless --no-build;
//  3. `berth init --json` on a fresh data directory, then `berth serve --port 0` on 127.0.0.1
//     (dist/bundle/cli.js, the shipped command);
//  4. runs the suite's server scenarios twice over streamable HTTP, for spec 2025-11-25 (the
//     legacy, initialize-based era that v1 clients speak) and for the requirement set of
//     2026-07-28 (the stateless revision SDK v2 implements). The suite's client sends no
//     Authorization header and has no option to add one, so the suite talks to a loopback
//     proxy that adds `Authorization: Bearer <root token>` and passes everything else (Host
//     and Origin included) through unchanged;
//  5. runs the Inspector CLI (tools/list --strict, tools/call get_current_team) over HTTP and
//     over stdio (`berth mcp`), and checks that a request without a token is refused;
//  6. compares every failing check with the baseline (per check, like the suite's own
//     --expected-failures: a failure not in the baseline is a regression, a baseline entry that
//     no longer fails is stale) and exits 1 on either; kills berth and removes its data.
//
// The suite has no stdio transport: stdio is covered by the Inspector runs only.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './lib/start-server.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const option = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TOOLS = path.join(ROOT, 'scripts', 'mcp-conformance');
// The shipped `berth` command (package.json bin): the esbuild bundle of dist/cli.js.
const CLI = path.resolve(option('--cli') ?? path.join(ROOT, 'dist', 'bundle', 'cli.js'));
const BASELINE = path.join(ROOT, 'test', 'conformance-baseline.json');

const log = (...a) => console.error('[mcp-conformance]', ...a);

/** The two passes of the suite: the legacy era, and the current revision's requirement set. */
const RUNS = [
  { name: 'spec-2025-11-25', args: ['--spec-version', '2025-11-25'] },
  { name: 'requirements-2026-07-28', args: ['--requirements', '2026-07-28'] },
];

// ---------------------------------------------------------------------------------------------
// Child processes

/** Runs a command to completion; never throws on a non-zero exit (the caller decides). */
function run(cmd, args, { env = process.env, cwd = ROOT, timeoutMs = 120_000, input } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
    child.stdin.end(input ?? '');
  });
}

const PINNED = JSON.parse(fs.readFileSync(path.join(TOOLS, 'package.json'), 'utf8')).dependencies;
const installedVersion = (name) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(TOOLS, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
};
const NODE22 = path.join(TOOLS, 'node_modules', 'node', 'bin', 'node');
const binOf = (name, bin) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(TOOLS, 'node_modules', name, 'package.json'), 'utf8'));
  return path.join(TOOLS, 'node_modules', name, typeof pkg.bin === 'string' ? pkg.bin : pkg.bin[bin]);
};

/** Installs scripts/mcp-conformance/ from its lockfile when a pinned tool is missing. */
async function ensureTools() {
  const stale = Object.entries(PINNED).filter(([name, version]) => installedVersion(name) !== version);
  const nodeOk = fs.existsSync(NODE22) && spawnSync(NODE22, ['--version'], { encoding: 'utf8' }).stdout.startsWith('v22.');
  if (stale.length === 0 && nodeOk) return { installed: false, ms: 0 };
  log(`installing the conformance tools in ${path.relative(ROOT, TOOLS)} (npm ci, ~330 MB, once)...`);
  const t0 = Date.now();
  // npm exports its own config to scripts as npm_config_*; a child `npm ci` must not inherit
  // the parent's (e.g. allow-scripts, which npm refuses from the environment in a project).
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k)));
  const r = await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: TOOLS, env, timeoutMs: 600_000 });
  if (r.code !== 0) throw new Error(`npm ci in ${TOOLS} failed (${r.code}):\n${r.stderr.slice(-4000)}`);
  if (!fs.existsSync(NODE22)) throw new Error(`npm ci did not provide Node 22 at ${NODE22}`);
  return { installed: true, ms: Date.now() - t0 };
}

// ---------------------------------------------------------------------------------------------
// berth and the proxy in front of it

function berthEnv(extra = {}) {
  return {
    ...process.env,
    LOG_LEVEL: 'warn',
    // The suite sends a few hundred requests in two seconds; the limiter stays on (its headers
    // are on every answer) with a budget the run cannot exhaust.
    API_RATE_LIMIT: '1000000',
    // Defaults, whatever the caller's environment says.
    HOST: '127.0.0.1',
    MCP_ALLOWED_ORIGINS: '',
    MCP_ALLOWED_HOSTS: '',
    REDIS_URL: '',
    ...extra,
  };
}

async function initBerth(dataDir) {
  const r = await run(process.execPath, [CLI, 'init', '--json', '--data', dataDir], { env: berthEnv() });
  if (r.code !== 0) throw new Error(`berth init failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout).token;
}

/** `berth serve --port 0`; resolves with its URL once it prints `berth: listening on URL`. */
function serveBerth(dataDir) {
  return startServer({ label: 'berth serve', args: [CLI, 'serve', '--port', '0', '--data', dataDir], env: berthEnv(), cwd: ROOT, ready: /^berth: listening on (\S+)$/m });
}

/**
 * A loopback proxy that adds the bearer token when a request has none; every other header and
 * byte goes through unchanged both ways, so berth's Host and Origin checks see what the suite sent.
 */
function authProxy(target, token) {
  const t = new URL(target);
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    headers.authorization ??= `Bearer ${token}`;
    const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.rawHeaders);
      r.pipe(res);
    });
    up.on('error', (e) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${e.message}`);
    });
    req.pipe(up);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      }),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// The conformance suite

/** Reads `<out>/server-<scenario>-<timestamp>/checks.json` into { scenario, checks }[]. */
function readResults(outDir) {
  const results = [];
  for (const dir of fs.readdirSync(outDir).sort()) {
    const file = path.join(outDir, dir, 'checks.json');
    if (!fs.existsSync(file)) continue;
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
    const checks = JSON.parse(fs.readFileSync(file, 'utf8')).map((c) => ({
      id: c.id,
      status: c.status,
      ...(c.errorMessage ? { message: String(c.errorMessage).slice(0, 500) } : {}),
    }));
    results.push({ scenario, checks });
  }
  return results;
}

async function runSuite(mcpUrl, workDir) {
  const bin = binOf('@modelcontextprotocol/conformance', 'conformance');
  const runs = [];
  for (const r of RUNS) {
    const out = path.join(workDir, r.name);
    const t0 = Date.now();
    const res = await run(NODE22, [bin, 'server', '--url', mcpUrl, ...r.args, '-o', out], { timeoutMs: 300_000 });
    fs.writeFileSync(path.join(workDir, `${r.name}.log`), res.stdout + res.stderr);
    const scenarios = fs.existsSync(out) ? readResults(out) : [];
    if (scenarios.length === 0) throw new Error(`the suite produced no results for ${r.name} (exit ${res.code}):\n${(res.stdout + res.stderr).slice(-4000)}`);
    runs.push({ name: r.name, args: r.args, exitCode: res.code, ms: Date.now() - t0, scenarios });
  }
  return runs;
}

/**
 * The suite's own --expected-failures semantics, per check. Baseline entries are written as the
 * suite writes them: `scenario` (every check of it) or `scenario:check-id`. A FAILURE that no entry
 * covers is unexpected. An entry that fails in no run is stale: either it passes now (remove it)
 * or it names a check the pinned suite never emits (a typo).
 */
function compare(runs, baseline) {
  const entries = baseline.notApplicable.flatMap((group) =>
    group.checks.map((key) => {
      const [scenario, check] = key.split(':');
      return { key, scenario, check: check ?? null };
    }),
  );
  const entryFor = (scenario, id) => entries.find((e) => e.scenario === scenario && (e.check === null || e.check === id));
  const unexpected = [];
  const expected = [];
  const warnings = [];
  const failed = new Set();
  const seen = new Set();
  for (const r of runs) {
    for (const s of r.scenarios) {
      for (const c of s.checks) {
        seen.add(s.scenario);
        seen.add(`${s.scenario}:${c.id}`);
        const item = { run: r.name, scenario: s.scenario, check: c.id, ...(c.message ? { message: c.message } : {}) };
        if (c.status === 'WARNING') warnings.push(item);
        if (c.status !== 'FAILURE') continue;
        const entry = entryFor(s.scenario, c.id);
        if (entry) {
          expected.push(item);
          failed.add(entry.key);
        } else unexpected.push(item);
      }
    }
  }
  const stale = entries.filter((e) => !failed.has(e.key)).map((e) => ({ entry: e.key, why: seen.has(e.key) ? 'no longer fails: remove it from the baseline' : 'the suite emits no such check' }));
  return { unexpected, expected, stale, warnings };
}

// ---------------------------------------------------------------------------------------------
// The Inspector CLI

async function inspector(label, args, workDir, expectExit = 0) {
  const home = path.join(workDir, 'inspector-home');
  fs.mkdirSync(home, { recursive: true });
  const bin = binOf('@modelcontextprotocol/inspector', 'mcp-inspector');
  const env = { ...process.env, HOME: home, MCP_CATALOG_PATH: path.join(home, 'mcp.json'), NO_COLOR: '1' };
  const t0 = Date.now();
  const r = await run(NODE22, [bin, '--cli', ...args], { env, timeoutMs: 60_000 });
  let json;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { label, exitCode: r.code, ms: Date.now() - t0, json, stderr: r.stderr.slice(-3000), expectExit };
}

async function runInspector(berthUrl, token, dataDir, workDir) {
  const url = `${berthUrl}/mcp`;
  const auth = ['--header', `Authorization: Bearer ${token}`];
  const stdio = ['-e', `BERTH_TOKEN=${token}`, '-e', 'LOG_LEVEL=warn', process.execPath, CLI, 'mcp', '--data', dataDir];
  const calls = [
    await inspector('http tools/list --strict', [url, ...auth, '--method', 'tools/list', '--strict'], workDir),
    await inspector('http tools/call get_current_team', [url, ...auth, '--method', 'tools/call', '--tool-name', 'get_current_team'], workDir),
    await inspector('http without a token is refused', [url, '--method', 'tools/list'], workDir, 'non-zero'),
    await inspector('stdio tools/list --strict', [...stdio, '--method', 'tools/list', '--strict'], workDir),
    await inspector('stdio tools/call get_current_team', [...stdio, '--method', 'tools/call', '--tool-name', 'get_current_team'], workDir),
  ];
  const names = (c) => (c.json?.tools ?? []).map((t) => t.name).sort();
  const results = calls.map((c) => {
    const problems = [];
    if (c.expectExit === 'non-zero') {
      if (c.exitCode === 0) problems.push('expected a non-zero exit (401), got 0');
    } else if (c.exitCode !== 0) {
      problems.push(`exit ${c.exitCode}${c.exitCode === 6 ? ' (--strict found error-severity schema problems)' : ''}`);
    }
    if (c.label.includes('tools/list') && c.expectExit === 0) {
      if (!names(c).includes('get_current_team')) problems.push('tools/list does not include get_current_team');
    }
    if (c.label.includes('tools/call')) {
      if (c.json?.isError) problems.push(`tool error: ${JSON.stringify(c.json.content)}`);
      else if (typeof c.json?.structuredContent?.name !== 'string') problems.push('no structuredContent.name in the result');
    }
    const warnings = /(\d+) errors?, (\d+) warnings?/.exec(c.stderr);
    return {
      label: c.label,
      ok: problems.length === 0,
      problems,
      exitCode: c.exitCode,
      ms: c.ms,
      ...(c.label.includes('tools/list') && c.expectExit === 0 ? { tools: names(c).length } : {}),
      ...(warnings ? { strict: { errors: Number(warnings[1]), warnings: Number(warnings[2]) } } : {}),
      ...(problems.length ? { stderr: c.stderr } : {}),
    };
  });
  const [httpList, , , stdioList] = calls;
  // enable_toolsets needs a session that can announce list changes: stdio has one, stateless HTTP does not.
  const sessionOnly = (c) => names(c).filter((n) => n !== 'enable_toolsets');
  const same = JSON.stringify(sessionOnly(httpList)) === JSON.stringify(sessionOnly(stdioList));
  results.push({
    label: 'stdio and http list the same tools (but enable_toolsets, stdio only)',
    ok: same,
    problems: same ? [] : [`http: ${names(httpList).join(',')} / stdio: ${names(stdioList).join(',')}`],
  });
  return results;
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const t0 = Date.now();
  const report = { ok: false, tools: {}, build: null, runs: [], inspector: [], comparison: null };
  const tools = await ensureTools();
  report.tools = {
    conformance: installedVersion('@modelcontextprotocol/conformance'),
    inspector: installedVersion('@modelcontextprotocol/inspector'),
    node: spawnSync(NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim(),
    installMs: tools.ms,
  };

  if (!flag('--no-build')) {
    const b0 = Date.now();
    const b = await run('npm', ['run', 'build'], { timeoutMs: 300_000 });
    if (b.code !== 0) throw new Error(`npm run build failed:\n${b.stdout}\n${b.stderr}`);
    report.build = { ms: Date.now() - b0 };
  }
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: build berth first (npm run build)`);

  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-conformance-'));
  const dataDir = path.join(workDir, 'data');
  fs.mkdirSync(dataDir);
  let berth;
  let proxy;
  try {
    const token = await initBerth(dataDir);
    berth = await serveBerth(dataDir);
    proxy = await authProxy(berth.url, token);
    log(`berth on ${berth.url}, suite via ${proxy.url}/mcp`);
    report.runs = await runSuite(`${proxy.url}/mcp`, workDir);
    report.inspector = await runInspector(berth.url, token, dataDir, workDir);
  } finally {
    await proxy?.close();
    await berth?.stop();
    if (flag('--keep')) log(`kept ${workDir}`);
    else fs.rmSync(workDir, { recursive: true, force: true });
  }

  const baseline = JSON.parse(fs.readFileSync(BASELINE, 'utf8'));
  report.comparison = compare(report.runs, baseline);
  const inspectorFailed = report.inspector.filter((r) => !r.ok);
  report.ok = report.comparison.unexpected.length === 0 && report.comparison.stale.length === 0 && inspectorFailed.length === 0;
  report.ms = Date.now() - t0;

  // Human summary on stderr; the JSON report on stdout or in --json FILE.
  for (const r of report.runs) {
    const counts = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0 };
    for (const s of r.scenarios) for (const c of s.checks) counts[c.status] = (counts[c.status] ?? 0) + 1;
    const failing = r.scenarios.filter((s) => s.checks.some((c) => c.status === 'FAILURE')).length;
    log(
      `${r.name}: ${r.scenarios.length} scenarios (${failing} with failing checks), checks: ${counts.SUCCESS} passed, ${counts.FAILURE} failed, ${counts.WARNING} warnings, ${counts.SKIPPED} skipped — ${r.ms} ms`,
    );
  }
  const c = report.comparison;
  log(`baseline: ${c.expected.length} failing checks are listed as not applicable; ${c.unexpected.length} unexpected; ${c.stale.length} stale entries`);
  for (const u of c.unexpected) log(`  UNEXPECTED ${u.run} ${u.scenario}:${u.check} — ${u.message ?? ''}`);
  for (const s of c.stale) log(`  STALE ${s.entry}: ${s.why}`);
  for (const w of c.warnings) log(`  warning ${w.run} ${w.scenario}:${w.check}${w.message ? ` — ${w.message}` : ''}`);
  for (const i of report.inspector)
    log(
      `inspector: ${i.ok ? 'ok  ' : 'FAIL'} ${i.label}${i.ms ? ` (${i.ms} ms)` : ''}${i.strict ? ` [strict: ${i.strict.errors} errors, ${i.strict.warnings} warnings]` : ''}${i.ok ? '' : ` — ${i.problems.join('; ')}`}`,
    );
  log(`${report.ok ? 'PASS' : 'FAIL'} in ${(report.ms / 1000).toFixed(1)} s${tools.installed ? ` (tools installed in ${(tools.ms / 1000).toFixed(1)} s)` : ''}`);

  const json = JSON.stringify(report, null, 2);
  const out = option('--json');
  if (out) fs.writeFileSync(out, json);
  else if (!flag('--quiet')) process.stdout.write(`${json}\n`);
  process.exitCode = report.ok ? 0 : 1;
}

main().catch((err) => {
  log(err instanceof Error ? err.stack : String(err));
  process.exitCode = 2;
});
