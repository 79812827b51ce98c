// bench/tasks: how long an MCP task-augmented call takes to answer with its task (issue 38 item 2,
// goal p95 < 500 ms whatever the work), against a plain read call in the same run.
//
//   npm run build && node bench/tasks/run.mjs [rounds=200] [--postgres URL]
//
// berth serves in this process (dist/serve.js, real token auth, its store: SQLite, or the
// PostgreSQL database given). One application on a record-only server. Interleaved, one request at
// a time, raw JSON-RPC POSTs to /mcp (undici):
//   - read:        tools/call get_application (2025-11-25 wire; the HTTP fast path answers it)
//   - task 2025:   tools/call start_application with params.task (the SDK path; answer = the task)
//   - task 2026:   tools/call start_application, the tasks extension declared in the envelope
// The task calls' work (a deployment through the job queue) goes on after the answer; the time is
// until the task is answered. p50/p95 of each, and each task kind's ratio to the read.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';

const dist = path.resolve(import.meta.dirname, '../../dist');
const { openStore } = await import(path.join(dist, 'store/db.js'));
const admin = await import(path.join(dist, 'core/admin.js'));
const { loadConfig } = await import(path.join(dist, 'config/config.js'));
const { startServer } = await import(path.join(dist, 'serve.js'));

const argv = process.argv.slice(2);
const pgAt = argv.indexOf('--postgres');
const databaseUrl = pgAt >= 0 ? argv[pgAt + 1] : null;
const rounds = Number(argv.find((a, i) => /^\d+$/.test(a) && argv[i - 1] !== '--postgres') ?? 200);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-tasks-'));
const db = await openStore(dataDir, databaseUrl);
const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
const config = loadConfig({ LOG_LEVEL: 'silent', API_RATE_LIMIT: '0', BERTH_QUEUE_CAP: '100000' }, { dataDir, databaseUrl, host: '127.0.0.1', port: 0 });
const server = await startServer(config, () => {});
const auth = { authorization: `Bearer ${init.token}` };

async function rest(method, p, body) {
  const r = await request(`${server.url}/api/v1${p}`, { method, headers: { ...auth, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const json = await r.body.json();
  if (r.statusCode >= 300) throw new Error(`${method} ${p}: ${r.statusCode} ${JSON.stringify(json)}`);
  return json;
}
const srv = await rest('POST', '/servers', { name: 'record-only', ip: '10.0.0.1' });
const project = await rest('POST', '/projects', { name: 'bench' });
const app = await rest('POST', '/applications/dockerimage', {
  project_uuid: project.uuid,
  server_uuid: srv.uuid,
  environment_name: 'production',
  docker_registry_image_name: 'nginx',
  docker_registry_image_tag: '1.27',
  ports_exposes: '80',
});

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
const kinds = {
  read: { era: '2025-11-25', params: { name: 'get_application', arguments: { uuid: app.uuid } } },
  task2025: { era: '2025-11-25', params: { name: 'start_application', arguments: { uuid: app.uuid }, task: { ttl: 60_000 } } },
  task2026: { era: '2026-07-28', params: { name: 'start_application', arguments: { uuid: app.uuid }, _meta: MODERN_META } },
};

async function once(kind) {
  const k = kinds[kind];
  const headers = { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': k.era };
  if (k.era === '2026-07-28') Object.assign(headers, { 'mcp-method': 'tools/call', 'mcp-name': k.params.name });
  const started = performance.now();
  const r = await request(`${server.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: k.params }) });
  const text = await r.body.text();
  const ms = performance.now() - started;
  const line = text.startsWith('{')
    ? text
    : text
        .split('\n')
        .find((l) => l.startsWith('data: '))
        ?.slice(6);
  const result = JSON.parse(line ?? '{}').result;
  const ok = kind === 'read' ? result && !result.isError : kind === 'task2025' ? result?.task?.taskId : result?.resultType === 'task';
  if (!ok) throw new Error(`${kind}: unexpected answer ${text.slice(0, 300)}`);
  return ms;
}

const times = { read: [], task2025: [], task2026: [] };
for (let i = 0; i < 20; i++) for (const k of Object.keys(kinds)) await once(k); // warm-up
for (let i = 0; i < rounds; i++) for (const k of Object.keys(kinds)) times[k].push(await once(k));

const f = (x) => x.toFixed(1);
console.log(`MCP task handle latency, ${rounds} rounds each, interleaved, one request at a time (${databaseUrl ? 'PostgreSQL' : 'SQLite'})`);
console.log('kind       p50 ms   p95 ms   p50 ratio to read   p95 ratio to read');
for (const [k, xs] of Object.entries(times)) {
  const r50 = pct(xs, 50) / pct(times.read, 50);
  const r95 = pct(xs, 95) / pct(times.read, 95);
  console.log(`${k.padEnd(9)} ${f(pct(xs, 50)).padStart(7)} ${f(pct(xs, 95)).padStart(8)}   ${r50.toFixed(2).padStart(17)}   ${r95.toFixed(2).padStart(17)}`);
}
const worst = Math.max(pct(times.task2025, 95), pct(times.task2026, 95));
console.log(`goal: task answer p95 < 500 ms: ${worst < 500 ? 'met' : 'NOT met'} (${f(worst)} ms)`);

await server.close();
await db.destroy();
fs.rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
