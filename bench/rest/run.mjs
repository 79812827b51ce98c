// bench/rest: authenticated GET /api/v1/teams/current requests/s, in one run:
//   berth (limiter on, limit set high) vs a bare node:http server answering the same JSON, and
//   berth with the limiter on vs off. Servers run in child processes; autocannon drives them.
//   Also a Fastify app answering the same JSON with nothing behind it (bench/rest/fastify-floor.mjs):
//   the framework's own floor, so the ratio can be split into "Fastify" and "berth's own work".
//   A second floor adds what no berth request can skip (SHA-256 of the secret, the store's
//   freshness check): see fastify-floor.mjs.
//   Each server's CPU time per request (user + system, from /proc) is printed next to its req/s:
//   on a shared machine it moves far less than req/s.
//   Servers are measured in alternating rounds (each round starts every server anew) and the
//   median round per server is reported, so a burst of load on a shared machine moves one round,
//   not one server.
//   With PostgreSQL installed (scripts/postgres.sh install), berth on a PostgreSQL store is measured
//   too, against berth on SQLite in the same run (a cluster in a temp dir, started by the script).
//   `--stores` measures berth on SQLite and on PostgreSQL only (the store ratio, quicker), and
//   `--path /api/v1/projects` (with --stores) another GET, one whose operation reads the store;
//   `--base OTHER/dist/bundle/cli.js` also measures another build of berth on both stores in the
//   same rounds (A/B for a src change: before and after in one run).
// Usage: npm run build && node bench/rest/run.mjs [seconds=5] [connections=50] [rounds=3] [--stores [--path P]] [--base CLI]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { cpuMs } from '../../scripts/lib/proc.mjs';
import { startServer } from '../../scripts/lib/start-server.mjs';

const argv = process.argv.slice(2);
const storesOnly = argv.includes('--stores');
const baseAt = argv.indexOf('--base');
const baseCli = baseAt === -1 ? null : path.resolve(argv.splice(baseAt, 2)[1]);
const pathAt = argv.indexOf('--path');
const reqPath = pathAt === -1 ? '/api/v1/teams/current' : argv.splice(pathAt, 2)[1];
if (reqPath !== '/api/v1/teams/current' && !storesOnly) throw new Error('--path needs --stores (the floors answer /api/v1/teams/current only)');
const positional = argv.filter((a) => !a.startsWith('--'));
const seconds = Number(positional[0] ?? 5);
const connections = Number(positional[1] ?? 50);
const rounds = Number(positional[2] ?? 3);
const cli = path.resolve(import.meta.dirname, '../../dist/bundle/cli.js');

const start = (args, env = {}) => startServer({ args, env: { ...process.env, LOG_LEVEL: 'silent', ...env } });

function load(url, token, duration = seconds) {
  return new Promise((resolve, reject) => {
    autocannon({ url: `${url}${reqPath}`, connections, duration, headers: { authorization: `Bearer ${token}` } }, (err, r) => {
      if (err) return reject(err);
      if (r.non2xx) return reject(new Error(`${r.non2xx} non-2xx answers from ${url}`));
      resolve(r);
    });
  });
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-'));
const init = JSON.parse(execFileSync(process.execPath, [cli, 'init', '--json', '--data', dataDir], { encoding: 'utf8' }));
const team = JSON.parse(execFileSync(process.execPath, [cli, 'settings', 'get', '--json', '--data', dataDir], { encoding: 'utf8' }));
void team;

// The bare baseline answers the same bytes berth does, checking only that a bearer token is present.
const body = await (async () => {
  const s = await start([cli, 'serve', '--port', '0', '--data', dataDir]);
  const r = await fetch(`${s.url}/api/v1/teams/current`, { headers: { authorization: `Bearer ${init.token}` } });
  const text = await r.text();
  await s.stop();
  return text;
})();
const bareSrc = `
const http = require('node:http');
const body = ${JSON.stringify(body)};
const srv = http.createServer((req, res) => {
  if (!req.headers.authorization) { res.writeHead(401); return res.end(); }
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}).listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + srv.address().port));`;

// berth on PostgreSQL: its own cluster and store, its own root token.
const pgScript = path.resolve(import.meta.dirname, '../../scripts/postgres.sh');
let pg;
try {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-pg-')), 'cluster');
  const port = 20000 + Math.floor(Math.random() * 20000);
  const url = execFileSync('bash', [pgScript, 'up', dir, String(port)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop();
  const pgInit = JSON.parse(execFileSync(process.execPath, [cli, 'init', '--json', '--data', dataDir], { encoding: 'utf8', env: { ...process.env, DATABASE_URL: url } }));
  pg = { dir, url, token: pgInit.token };
} catch (err) {
  console.log(`(no PostgreSQL: ${err.message.split('\n')[0]}; berth on PostgreSQL is not measured)`);
}

// The other build gets stores of its own: a store migrated by one build may hold a migration the
// other does not know, which berth refuses to open.
let base;
if (baseCli) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-base-'));
  const token = JSON.parse(execFileSync(process.execPath, [baseCli, 'init', '--json', '--data', dir], { encoding: 'utf8' })).token;
  base = { dir, token };
  if (pg) {
    execFileSync('psql', [pg.url, '-qAt', '-c', 'CREATE DATABASE berth_base']);
    const url = pg.url.replace(/\/[^/?]*(\?.*)?$/, '/berth_base');
    const pgToken = JSON.parse(execFileSync(process.execPath, [baseCli, 'init', '--json', '--data', dir], { encoding: 'utf8', env: { ...process.env, DATABASE_URL: url } })).token;
    base.pg = { url, token: pgToken };
  }
}

const floor = path.resolve(import.meta.dirname, 'fastify-floor.mjs');
const servers = [
  ...(storesOnly
    ? []
    : [
        ['bare node:http', ['-e', bareSrc], {}],
        ['Fastify floor', [floor], { BENCH_BODY: body }],
        ['floor + hash + pragma', [floor], { BENCH_BODY: body, BENCH_STORE: path.join(dataDir, 'berth.sqlite'), BENCH_TOKEN: init.token }],
      ]),
  ['berth, limiter on', [cli, 'serve', '--port', '0', '--data', dataDir], { API_RATE_LIMIT: '1000000000' }],
  ...(storesOnly ? [] : [['berth, limiter off', [cli, 'serve', '--port', '0', '--data', dataDir], { API_RATE_LIMIT: '0' }]]),
  ...(pg ? [['berth on PostgreSQL', [cli, 'serve', '--port', '0', '--data', dataDir], { API_RATE_LIMIT: '1000000000', DATABASE_URL: pg.url }, pg.token]] : []),
  ...(baseCli
    ? [
        ['base, SQLite', [baseCli, 'serve', '--port', '0', '--data', base.dir], { API_RATE_LIMIT: '1000000000' }, base.token],
        ...(base.pg ? [['base, PostgreSQL', [baseCli, 'serve', '--port', '0', '--data', base.dir], { API_RATE_LIMIT: '1000000000', DATABASE_URL: base.pg.url }, base.pg.token]] : []),
      ]
    : []),
];
const samples = Object.fromEntries(servers.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, args, env, token = init.token] of servers) {
    const s = await start(args, env);
    await load(s.url, token, 2).catch(() => 0); // warm-up (JIT, connections)
    const before = cpuMs(s.pid);
    const r = await load(s.url, token);
    samples[name].push({ rps: r.requests.average, cpu: ((cpuMs(s.pid) - before) * 1000) / r.requests.total });
    await s.stop();
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = Object.fromEntries(servers.map(([name]) => [name, median(samples[name].map((x) => x.rps))]));
const cpu = Object.fromEntries(servers.map(([name]) => [name, median(samples[name].map((x) => x.cpu))]));
fs.rmSync(dataDir, { recursive: true, force: true });
if (base) fs.rmSync(base.dir, { recursive: true, force: true });
if (pg) {
  execFileSync('bash', [pgScript, 'down', pg.dir]);
  fs.rmSync(path.dirname(pg.dir), { recursive: true, force: true });
}

console.log(`\nGET ${reqPath}, ${connections} connections, ${seconds} s, median of ${rounds} rounds, load average ${os.loadavg()[0].toFixed(2)}:`);
console.log(`  ${'server'.padEnd(24)} ${'req/s'.padStart(7)}  CPU µs/req   (rounds, req/s)`);
for (const [k, v] of Object.entries(results)) {
  const each = samples[k].map((x) => Math.round(x.rps)).join(' / ');
  console.log(`  ${k.padEnd(24)} ${String(Math.round(v)).padStart(7)}  ${cpu[k].toFixed(1).padStart(10)}   (${each})`);
}
const pct = (a, b) => `${((results[a] / results[b]) * 100).toFixed(1)} %`;
if (!storesOnly) {
  const limiterCost = 1 - results['berth, limiter on'] / results['berth, limiter off'];
  console.log(`\nberth / bare:          ${pct('berth, limiter on', 'bare node:http')}   (goal ≥ 60 %)`);
  console.log(`  Fastify floor / bare: ${pct('Fastify floor', 'bare node:http')}   (the framework alone, nothing behind it)`);
  console.log(`  floor + hash + pragma / bare: ${pct('floor + hash + pragma', 'bare node:http')}   (plus what no berth request can skip)`);
  console.log(`  berth / Fastify floor: ${pct('berth, limiter on', 'Fastify floor')}`);
  console.log(`limiter cost:          ${(limiterCost * 100).toFixed(1)} %   (goal < 10 %)`);
}
// The per-round ratio too: both stores run back to back in each round, so a burst of load from
// others on the machine moves both figures of one round rather than one store.
const perRound = (a, b) => samples[a].map((x, i) => ((x.rps / samples[b][i].rps) * 100).toFixed(1)).join(' / ');
if (pg) console.log(`berth on PostgreSQL / on SQLite: ${pct('berth on PostgreSQL', 'berth, limiter on')}   (goal ≥ 50 %; per round: ${perRound('berth on PostgreSQL', 'berth, limiter on')})`);
if (pg && baseCli) console.log(`base on PostgreSQL / on SQLite:  ${pct('base, PostgreSQL', 'base, SQLite')}   (per round: ${perRound('base, PostgreSQL', 'base, SQLite')})`);
