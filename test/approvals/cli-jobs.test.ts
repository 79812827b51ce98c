/**
 * `berth approvals approve` (the built CLI) runs the same background lifecycle as `serve` and
 * `berth mcp` (src/assemble.ts): an approved deploy's job, started in the CLI's process, keeps
 * its lease for many leases while a `serve` shares the store (BERTH_JOB_LEASE_MS=2000 on both),
 * and the command ends only when the job has, recorded by its own runner. Before, the command
 * ended right after queueing: the deployment, running there, was cut off, and serve's sweep
 * failed it as "cut off by a stopped berth" one lease later.
 * The engine is a socket that accepts and never answers until the test closes it.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBerth, type Run } from '../helpers/cli-run.js';
import { call, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';
import { until } from '../helpers/wait.js';

const LEASE = { BERTH_JOB_LEASE_MS: '2000' };

let s: TestServer;
let dir: string;
let hung: net.Server;
const held = new Set<net.Socket>();
beforeAll(async () => {
  dir = tempDir('berth-cli-approve-');
  hung = net.createServer((c) => {
    held.add(c);
    c.on('close', () => held.delete(c));
    c.on('error', () => undefined);
  });
  await new Promise<void>((r) => hung.listen(path.join(dir, 'hung.sock'), r));
  s = await startTestServer({}, LEASE);
  expect((await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['deploy'] } })).status).toBe(200);
}, 60_000);
afterAll(async () => {
  for (const c of held) c.destroy();
  hung?.close();
  await s?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('berth approvals approve of a held deploy', () => {
  it('runs the deployment in the CLI with its lease renewed beside serve, and ends when the deployment has', async () => {
    const t = s.rootToken;
    const server = (await call(s.url, 'POST', '/api/v1/servers', { token: t, body: { ip: '127.0.0.1', engine_endpoint: `unix://${path.join(dir, 'hung.sock')}` } })).json.uuid;
    const project = (await call(s.url, 'POST', '/api/v1/projects', { token: t, body: { name: 'cli-approve' } })).json.uuid;
    const app = (
      await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
        token: t,
        body: { project_uuid: project, server_uuid: server, environment_name: 'production', docker_registry_image_name: 'nginx' },
      })
    ).json.uuid;
    const asked = await call(s.url, 'POST', `/api/v1/deploy?uuid=${app}`, { token: t });
    expect(asked.status, asked.text).toBe(202);
    const approval = asked.json.approval.uuid as string;

    let result: Run | undefined;
    const cli = runBerth(['approvals', 'approve', approval, '--email', s.ownerEmail, '--json', '--data', s.dataDir], {
      cwd: s.dataDir,
      env: { LOG_LEVEL: 'silent', ...LEASE, ...storeEnv(s.dataDir) },
    }).then((r) => (result = r));

    const row = () =>
      s.db
        .selectFrom('deployments as d')
        .innerJoin('resources as r', 'r.id', 'd.resource_id')
        .select(['d.status', 'd.lease_owner', 'd.lease_until', 'd.logs'])
        .where('r.uuid', '=', app)
        .executeTakeFirst();
    const started = await until(
      'the approved deployment to run',
      async () => {
        const x = await row();
        return x?.status === 'in_progress' ? x : undefined;
        // The CLI's start (a whole process, and the store's migrations check) on a loaded machine.
      },
      30_000,
    );
    // Three leases later: still running, still the CLI's (not serve's instance), its lease renewed, and the CLI still there.
    await new Promise((res) => setTimeout(res, 6_000));
    const later = await row();
    expect(later, later?.logs).toMatchObject({ status: 'in_progress', lease_owner: started.lease_owner });
    expect(later!.lease_until!).toBeGreaterThan(Date.now() - 200);
    expect(result, result?.stderr).toBeUndefined();

    // The engine goes away: the deployment ends as the engine says, in the CLI's runner, and the command ends with it.
    hung.close();
    for (const c of held) c.destroy();
    const done = await cli;
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ uuid: approval, status: 'succeeded', decided_via: 'cli' });
    const end = await row();
    expect(end).toMatchObject({ status: 'failed', lease_owner: started.lease_owner });
    expect(end!.logs).not.toBe('');
  }, 90_000);
});
