/**
 * PostgreSQL going away under a running berth (its own cluster, so the run's shared server is
 * not touched): requests fail closed with 503 and the contract's body, liveness stays up while
 * readiness says no, nothing is half-written, and berth recovers by itself when the server is back.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
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
  const pg = (cmd: string) => execFileSync('bash', [SCRIPT, cmd, cluster], { stdio: 'ignore' });

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-pg-outage-'));
    cluster = path.join(root, 'cluster');
    const url = execFileSync('bash', [SCRIPT, 'up', cluster, String(await freePort())], { encoding: 'utf8' }).trim().split('\n').pop()!;
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
    const back = await until('berth to reach the store again', async () => {
      const r = await call(server.url, 'GET', '/api/v1/teams/current', { token });
      return r.status === 200 ? r : undefined;
    }, 20_000);
    expect(back.json).toMatchObject({ name: 'Root Team' });
    expect((await call(server.url, 'GET', '/api/ready')).text).toBe('READY');
    const projects = await call(server.url, 'GET', '/api/v1/projects', { token });
    expect(projects.json.map((p: { name: string }) => p.name)).not.toContain('during the outage');
  }, 60_000);
});
