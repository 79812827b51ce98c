// bench/audit: what the audit write adds to a changing request (issue 26, goal ≤ 10 %), on SQLite
// and, when PostgreSQL is installed (scripts/postgres.sh install), on PostgreSQL, in one run.
//
// The operation is update_project (PATCH /api/v1/projects/{uuid}): a store-only change, the
// cheapest changing call there is, so the audit write is the largest share it can be.
//   - "with" and "without": the same core, the same caller and input, interleaved call by call:
//     Core.run (permission, validation, action, redaction, the audit entry) against the same
//     steps without the entry (the core's own execute(), gate included, which run() wraps; a
//     store-only operation such as this one runs there without the entry's transaction around
//     it, in its own). The difference is the audit's cost per call.
//   - the request: the same PATCH over real HTTP to berth serving that store (in this process,
//     one request at a time), interleaved with the two above, so the cost is also shown as a
//     share of a whole request: cost / (request - cost), from the medians of each kind.
// Usage: npm run build && node bench/audit/run.mjs [rounds=3000]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { request } from 'undici';

const dist = path.resolve(import.meta.dirname, '../../dist');
const { openStore } = await import(path.join(dist, 'store/db.js'));
const admin = await import(path.join(dist, 'core/admin.js'));
const { assembleCore } = await import(path.join(dist, 'assemble.js'));
const { operations } = await import(path.join(dist, 'core/operations/index.js'));
const { loadConfig } = await import(path.join(dist, 'config/config.js'));
const { startServer } = await import(path.join(dist, 'serve.js'));

const rounds = Number(process.argv[2] ?? 3000);
const op = operations.find((o) => o.name === 'update_project');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure(label, databaseUrl) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-audit-'));
  const db = await openStore(dataDir, databaseUrl);
  const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
  const config = loadConfig({ LOG_LEVEL: 'silent', API_RATE_LIMIT: '0' }, { dataDir, databaseUrl, host: '127.0.0.1', port: 0 });
  const { core, close } = assembleCore(db, config, pino({ level: 'silent' }));
  const caller = await core.identify({ authorization: `Bearer ${init.token}`, sourceIp: '127.0.0.1' });
  const project = await core.run(
    operations.find((o) => o.name === 'create_project'),
    caller,
    { name: 'bench' },
  );
  let n = 0;
  const input = () => ({ uuid: project.uuid, description: `d${n++}` });
  const withAudit = () => core.run(op, caller, input());
  // The same steps as run() less the entry, the approval gate included (it reads the team's
  // policy on every changing call: that is the gate's cost, not the audit's).
  const without = () => core.execute(op, caller, input(), {}, true);

  // The same change as a whole request, over HTTP.
  const server = await startServer(config, () => {});
  const patch = async () => {
    const res = await request(`${server.url}/api/v1/projects/${project.uuid}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${init.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ description: `h${n++}` }),
    });
    await res.body.text();
    if (res.statusCode !== 201) throw new Error(`PATCH answered ${res.statusCode}`);
  };

  // with, without and the request one call each per round, in a random order, and medians per
  // kind: on a shared machine the load moves by more than the effect within seconds, so blocks
  // of one kind measured apart (as this bench did before) compared different loads.
  const kinds = { with: withAudit, without, http: patch };
  const times = { with: [], without: [], http: [] };
  const order = Object.keys(kinds);
  for (let round = -Math.min(200, rounds / 10); round < rounds; round++) {
    order.sort(() => Math.random() - 0.5);
    for (const k of order) {
      const t = performance.now();
      await kinds[k]();
      if (round >= 0) times[k].push((performance.now() - t) * 1000);
    }
  }
  await server.close();

  const entries = (
    await db
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst()
  ).n;
  await close();
  await db.destroy();
  fs.rmSync(dataDir, { recursive: true, force: true });

  const mw = median(times.with);
  const mwo = median(times.without);
  const cost = mw - mwo;
  const req = median(times.http);
  console.log(
    `${label.padEnd(10)} core call without audit ${mwo.toFixed(0)} µs, with ${mw.toFixed(0)} µs: +${cost.toFixed(0)} µs (${((cost / mwo) * 100).toFixed(1)} % of the call); ` +
      `HTTP PATCH ${req.toFixed(0)} µs: audit ${((cost / (req - cost)) * 100).toFixed(1)} % of the request without it (${rounds} rounds, ${entries} entries written)`,
  );
}

await measure('SQLite', null);

const pgScript = path.resolve(import.meta.dirname, '../../scripts/postgres.sh');
let pgDir;
try {
  pgDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-pg-')), 'cluster');
  const port = 20000 + Math.floor(Math.random() * 20000);
  const url = execFileSync('bash', [pgScript, 'up', pgDir, String(port)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop();
  await measure('PostgreSQL', url);
} catch (err) {
  console.log(`(no PostgreSQL: ${err.message.split('\n')[0]}; not measured)`);
} finally {
  if (pgDir && fs.existsSync(pgDir)) execFileSync('bash', [pgScript, 'down', pgDir], { stdio: 'ignore' });
}
process.exit(0);
