/**
 * PostgreSQL going away under a running berth (its own cluster, so the run's shared server is
 * not touched): requests fail closed with 503 and the contract's body, liveness stays up while
 * readiness says no, nothing is half-written, and berth recovers by itself when the server is back.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { freePort } from '../helpers/process.js';
import { call } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

const SCRIPT = path.resolve(import.meta.dirname, '../../scripts/postgres.sh');

// PostgreSQL only (the SQLite run leaves postgres-* files out).
describe('PostgreSQL away and back', () => {
  let root: string;
  let cluster: string;
  let server: RunningServer;
  let token = '';
  let url = '';
  const pg = (cmd: string) => execFileSync('bash', [SCRIPT, cmd, cluster], { stdio: 'ignore' });

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-pg-outage-'));
    cluster = path.join(root, 'cluster');
    url = execFileSync('bash', [SCRIPT, 'up', cluster, String(await freePort())], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .pop()!;
    const lines: string[] = [];
    server = await startServer(loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: path.join(root, 'data'), databaseUrl: url, host: '127.0.0.1', port: 0 }), (l) => lines.push(l));
    token = lines.find((l) => l.includes('|'))!.trim();
  }, 60_000);
  afterAll(async () => {
    await server?.close().catch(() => undefined);
    if (cluster) execFileSync('bash', [SCRIPT, 'down', cluster], { stdio: 'ignore' });
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('answers 503 while the store is away, writes nothing, and recovers on its own', async () => {
    expect((await call(server.url, 'GET', '/api/v1/teams/current', { token })).status).toBe(200);
    expect((await call(server.url, 'GET', '/api/ready')).text).toBe('READY');

    pg('stop');
    const down = await call(server.url, 'GET', '/api/v1/teams/current', { token });
    expect(down.status).toBe(503);
    expect(down.json).toEqual({ message: 'The store is unavailable; try again shortly.' });
    expect(down.headers['retry-after']).toBe('5');
    const write = await call(server.url, 'POST', '/api/v1/projects', { token, body: { name: 'during the outage' } });
    expect(write.status).toBe(503);
    expect((await call(server.url, 'GET', '/api/ready')).status).toBe(503);
    // Liveness asks nothing of the store: the process is fine, a restart would not help.
    expect((await call(server.url, 'GET', '/api/health')).status).toBe(200);

    pg('start');
    const back = await until(
      'berth to reach the store again',
      async () => {
        const r = await call(server.url, 'GET', '/api/v1/teams/current', { token });
        return r.status === 200 ? r : undefined;
      },
      20_000,
    );
    expect(back.json).toMatchObject({ name: 'Root Team' });
    expect((await call(server.url, 'GET', '/api/ready')).text).toBe('READY');
    const projects = await call(server.url, 'GET', '/api/v1/projects', { token });
    expect(projects.json.map((p: { name: string }) => p.name)).not.toContain('during the outage');
  }, 60_000);

  it('a store that stops answering without refusing (a frozen link): /api/ready still answers, 503, and READY again once it answers', async () => {
    // A TCP relay between berth and PostgreSQL that can stop passing bytes while keeping every
    // connection open: berth's pooled connections then wait for ever (no refusal, no reset).
    const pgUrl = new URL(url);
    let frozen = false;
    const held: Buffer[] = [];
    const sockets = new Set<net.Socket>();
    const relay = net.createServer((client) => {
      const upstream = net.connect(Number(pgUrl.port), pgUrl.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => s.destroy());
        s.on('close', () => sockets.delete(s));
      }
      client.on('data', (d) => (frozen ? held.push(d) : upstream.write(d)));
      upstream.on('data', (d) => (frozen ? held.push(d) : client.write(d)));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const viaRelay = new URL(url);
    viaRelay.port = String((relay.address() as net.AddressInfo).port);
    const dir = fs.mkdtempSync(path.join(root, 'relay-'));
    const second = await startServer(loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: dir, databaseUrl: viaRelay.toString(), host: '127.0.0.1', port: 0 }), () => {});
    try {
      expect((await call(second.url, 'GET', '/api/ready')).text).toBe('READY');
      frozen = true;
      // Every answer comes (the query it asked is still waiting); once the last good probe is old, it says not ready.
      const down = await until(
        'readiness to say not ready',
        async () => {
          const r = await call(second.url, 'GET', '/api/ready');
          expect([200, 503]).toContain(r.status);
          return r.status === 503 ? r : undefined;
        },
        20_000,
      );
      expect(down.json).toEqual({ message: 'The store is unavailable; try again shortly.' });
      expect(down.headers['retry-after']).toBe('5');
      expect(held.length).toBeGreaterThan(0); // the probe really was sent, and held
      frozen = false;
      for (const s of sockets) s.destroy(); // what was held is lost: the pool replaces those connections
      await until('readiness to say ready again', async () => ((await call(second.url, 'GET', '/api/ready')).status === 200 ? true : undefined), 20_000);
    } finally {
      for (const s of sockets) s.destroy();
      relay.close();
      await second.close().catch(() => undefined);
    }
  }, 60_000);
});
