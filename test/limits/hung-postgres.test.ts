/**
 * A Redis or a PostgreSQL that is connected but does not answer (frozen with SIGSTOP; a
 * PostgreSQL behind a relay that stops passing bytes on) is an outage like a dead one: every
 * route and /api/ready answer 503 with Retry-After within the timeout (BERTH_REDIS_TIMEOUT_MS,
 * BERTH_STORE_TIMEOUT_MS), not 500, and berth recovers by itself when it answers again. The bound
 * is asserted loosely (well under 5 s): how fast is the setting's business, not this machine's.
 */
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import * as admin from '../../src/core/admin.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { openStore, type Db } from '../../src/store/db.js';
import { call, tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';
import { until } from '../helpers/wait.js';

/** A request that must be refused as an outage, and soon. */
async function outage(url: string, method: string, path: string, token?: string, body?: unknown) {
  const t0 = performance.now();
  const r = await call(url, method, path, { token, body });
  const ms = performance.now() - t0;
  expect({ path, status: r.status, retryAfter: r.headers['retry-after'] }).toEqual({ path, status: 503, retryAfter: '5' });
  expect(ms).toBeLessThan(5_000);
  return r;
}

/** A TCP relay to PostgreSQL that can stop passing bytes on (both ways) while connections stay open. */
function freezableRelay(target: { host: string; port: number }) {
  let frozen = false;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((c) => {
    const u = net.connect(target.port, target.host);
    const pair: [net.Socket, net.Socket] = [c, u];
    pairs.add(pair);
    c.on('data', (d) => u.write(d));
    u.on('data', (d) => c.write(d));
    const end = () => {
      pairs.delete(pair);
      c.destroy();
      u.destroy();
    };
    for (const s of pair) {
      s.on('close', end);
      s.on('error', end);
      if (frozen) s.pause();
    }
  });
  return {
    listen: () => new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port))),
    freeze() {
      frozen = true;
      for (const p of pairs) for (const s of p) s.pause();
    },
    thaw() {
      frozen = false;
      for (const p of pairs) for (const s of p) s.resume();
    },
    close() {
      for (const p of pairs) for (const s of p) s.destroy();
      server.close();
    },
  };
}

// PostgreSQL only (vitest.config.ts POSTGRES_ONLY): the SQLite run leaves the file out rather than skip it.
describe('a PostgreSQL that accepts connections but does not answer', () => {
  let dataDir: string;
  let db: Db;
  let relay: ReturnType<typeof freezableRelay>;
  let server: RunningServer;
  let token: string;
  beforeAll(async () => {
    dataDir = tempDir('berth-pg-hung-');
    const direct = storeUrlFor(dataDir)!;
    db = await openStore(dataDir, direct);
    token = (await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' })).token;
    const u = new URL(direct);
    relay = freezableRelay({ host: u.hostname, port: Number(u.port || 5432) });
    u.port = String(await relay.listen());
    const config = loadConfig({ LOG_LEVEL: 'silent', BERTH_STORE_TIMEOUT_MS: '1000' }, { dataDir, databaseUrl: u.toString(), host: '127.0.0.1', port: 0 });
    server = await startServer(config, () => {});
  });
  afterAll(async () => {
    relay?.thaw();
    await server?.close();
    relay?.close();
    await db?.destroy();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After (a query timeout, not a request held for ever) and recovers by itself', async () => {
    expect((await call(server.url, 'POST', '/api/v1/projects', { token, body: { name: 'before' } })).status).toBe(201);
    relay.freeze();
    await outage(server.url, 'GET', '/api/ready');
    await outage(server.url, 'POST', '/api/v1/projects', token, { name: 'during the freeze' });
    await outage(server.url, 'GET', '/api/v1/projects', token);
    relay.thaw();
    await until('READY again', async () => ((await call(server.url, 'GET', '/api/ready')).text === 'READY' ? true : undefined), 15_000);
    expect((await call(server.url, 'POST', '/api/v1/projects', { token, body: { name: 'after' } })).status).toBe(201);
    expect((await db.selectFrom('projects').select('name').orderBy('id').execute()).map((p) => p.name)).toEqual(['before', 'after']);
  }, 60_000);
});
