// bench/lists: an unpaged REST list of 2,000 applications (issue 41: Coolify clients list every
// item; goal: within 150 ms on SQLite), against a bare node:http server answering the same bytes
// in the same run. One request at a time over real HTTP, alternating berth and the baseline.
//   - berth: `GET /api/v1/applications` (no page/per_page) on a SQLite store holding 2,000
//     applications of one team (one made over the API, the rest copies of its row with their own
//     uuids and names), authenticated, rate limit off. Measured four ways each round:
//       root token, store unchanged (a Coolify client polling: the goal's figure);
//       read token (no read:sensitive: every item redacted);
//       one row changed before the request (its view is built again, the others reused);
//       every row changed before the request (every view built and stringified: the cold path),
//       with the root token and with the read token.
//   - bare: node:http answering the body berth answered, with the same headers' size.
//   - floor (in this process): the same 2,000 rows read with better-sqlite3 directly and
//     JSON.stringify'd, what no list of them can skip; on a loaded machine it alone can pass 150 ms.
// Prints the medians, spread (min–max) and p95 of each, and berth's ratio over the baseline.
// Usage: npx tsc -p tsconfig.build.json (or npm run build) && node bench/lists/run.mjs [rounds=30] [count=2000]
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';

const dist = path.resolve(import.meta.dirname, '../../dist');
const { openStore } = await import(path.join(dist, 'store/db.js'));
const admin = await import(path.join(dist, 'core/admin.js'));
const { loadConfig } = await import(path.join(dist, 'config/config.js'));
const { startServer } = await import(path.join(dist, 'serve.js'));

const rounds = Number(process.argv[2] ?? 30);
const count = Number(process.argv[3] ?? 2000);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-lists-'));
const db = await openStore(dataDir, undefined);
const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
const config = loadConfig({ LOG_LEVEL: 'silent', API_RATE_LIMIT: '0' }, { dataDir, host: '127.0.0.1', port: 0 });
const server = await startServer(config, () => {});
const auth = { authorization: `Bearer ${init.token}`, 'content-type': 'application/json' };
const api = async (method, p, body) => {
  const res = await request(`${server.url}/api/v1${p}`, { method, headers: auth, body: body ? JSON.stringify(body) : undefined });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${p}: ${res.statusCode} ${text}`);
  return JSON.parse(text);
};
const serverUuid = (await api('POST', '/servers', { name: 'bench', ip: '10.0.0.1' })).uuid;
const projectUuid = (await api('POST', '/projects', { name: 'bench' })).uuid;
const first = await api('POST', '/applications/dockerimage', {
  project_uuid: projectUuid,
  server_uuid: serverUuid,
  environment_name: 'production',
  docker_registry_image_name: 'nginx',
  ports_exposes: '80',
  domains: 'https://app.example.test',
});
const row = await db.selectFrom('resources').selectAll().where('uuid', '=', first.uuid).executeTakeFirstOrThrow();
const { id: _id, ...template } = row;
const copies = Array.from({ length: count - 1 }, (_, i) => ({ ...template, uuid: `bench${String(i).padStart(19, '0')}`, name: `app-${i}` }));
for (let i = 0; i < copies.length; i += 200)
  await db
    .insertInto('resources')
    .values(copies.slice(i, i + 200))
    .execute();

const get = async (url, headers) => {
  const t = performance.now();
  const res = await request(url, { headers });
  const body = await res.body.text();
  return { ms: performance.now() - t, body, status: res.statusCode };
};
const sample = await get(`${server.url}/api/v1/applications`, auth);
const firstMs = sample.ms;
const items = JSON.parse(sample.body);
if (sample.status !== 200 || items.length !== count) throw new Error(`expected ${count} applications, got ${sample.status} ${items.length}`);

const bare = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-total-count': String(count) });
  res.end(sample.body);
});
await new Promise((r) => bare.listen(0, '127.0.0.1', r));
const bareUrl = `http://127.0.0.1:${bare.address().port}/`;

const Database = (await import('better-sqlite3')).default;
const file = fs.readdirSync(dataDir).find((f) => /\.(db|sqlite)$/.test(f));
const raw = new Database(path.join(dataDir, file), { readonly: true });
const teamId = row.team_id;
const rawList = raw.prepare("select * from resources where team_id = ? and kind = 'application' order by id");
const floor = () => {
  const t = performance.now();
  JSON.stringify(rawList.all(teamId));
  return performance.now() - t;
};
const readToken = (await admin.createToken(db, { email: 'owner@example.test', team: 'Root Team', name: 'bench-read', permissions: ['read'], expires: '7d' })).token;
const readAuth = { authorization: `Bearer ${readToken}` };
const list = `${server.url}/api/v1/applications`;
const stamp = () => new Date().toISOString();
const touchOne = (i) =>
  db
    .updateTable('resources')
    .set({ observed_at: stamp() })
    .where('uuid', '=', copies[i % copies.length].uuid)
    .execute();
const touchAll = () => db.updateTable('resources').set({ updated_at: stamp() }).where('team_id', '=', teamId).where('kind', '=', 'application').execute();
const ms = { berth: [], bare: [], floor: [], read: [], one: [], all: [], readAll: [] };
for (let i = 0; i < 5; i++) {
  await get(list, auth);
  await get(list, readAuth);
  await get(bareUrl, {});
}
for (let i = 0; i < rounds; i++) {
  await touchAll();
  ms.readAll.push((await get(list, readAuth)).ms);
  await touchAll();
  ms.all.push((await get(list, auth)).ms);
  // Two more lists of this state by each token, so the next ones find views kept as a poller does (src/core/view-memo.ts).
  for (const headers of [auth, auth, readAuth, readAuth]) await get(list, headers);
  await touchOne(i);
  ms.one.push((await get(list, auth)).ms);
  await get(list, readAuth);
  ms.berth.push((await get(list, auth)).ms);
  ms.bare.push((await get(bareUrl, {})).ms);
  ms.floor.push(floor());
  ms.read.push((await get(list, readAuth)).ms);
}
raw.close();
const kb = Math.round(Buffer.byteLength(sample.body) / 1024);
const fmt = (xs) => `median ${median(xs).toFixed(1)} ms  spread ${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}  p95 ${p95(xs).toFixed(1)} ms`;
const ratio = (xs) => `${(median(xs) / median(ms.bare)).toFixed(1)}× bare`;
console.log(
  `GET /api/v1/applications, ${count} items, ${kb} KiB, ${rounds} rounds, one at a time, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log(`  bare node:http                    ${fmt(ms.bare)}`);
console.log(`  floor (read + stringify, in proc) ${fmt(ms.floor)}`);
console.log(`  berth, first list after start     ${firstMs.toFixed(1)} ms`);
console.log(`  berth, store unchanged            ${fmt(ms.berth)}  ${ratio(ms.berth)}`);
console.log(`  berth, read token (redacted)      ${fmt(ms.read)}  ${ratio(ms.read)}`);
console.log(`  berth, one row changed            ${fmt(ms.one)}  ${ratio(ms.one)}`);
console.log(`  berth, every row changed (cold)   ${fmt(ms.all)}  ${ratio(ms.all)}`);
console.log(`  berth, read token, every row changed ${fmt(ms.readAll)}  ${ratio(ms.readAll)}`);
console.log(
  `${count} applications: berth ${median(ms.berth).toFixed(1)} ms median, ${ratio(ms.berth)} (${median(ms.bare).toFixed(1)} ms); goal ≤ 150 ms: ${median(ms.berth) <= 150 ? 'met' : 'NOT met'}`,
);
bare.close();
await server.close();
await db.destroy();
fs.rmSync(dataDir, { recursive: true, force: true });
