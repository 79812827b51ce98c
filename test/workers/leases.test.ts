/**
 * Job leases on a real store (SQLite or PostgreSQL, whichever the run uses): a second instance's
 * job runner takes over exactly the jobs whose lease ran out, by the restart rules, and leaves
 * a living instance's jobs alone; a claim is won once; stop() hands back what has not started.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleCore, type Assembled } from '../../src/assemble.js';
import { loadConfig } from '../../src/config/config.js';
import { nowIso } from '../../src/store/db.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';
import { buildWorld, type World } from '../helpers/world.js';

let s: TestServer;
let w: World;
const others: Assembled[] = [];
beforeAll(async () => {
  s = await startTestServer();
  w = await buildWorld(s);
});
afterAll(async () => {
  for (const o of others) await o.close();
  await s.stop();
});

/**
 * Another instance's core on the same store, as `berth serve` assembles it. The server's queue is
 * shared by every instance (counted in the store): wide enough here that the rows these tests
 * leave running do not hold back the ones they expect to run.
 */
function instance(concurrency = 50): Assembled {
  const a = assembleCore(
    s.db,
    loadConfig({ LOG_LEVEL: 'silent', BERTH_JOB_LEASE_MS: '1000', BERTH_SSH_TIMEOUT_MS: '500', BERTH_QUEUE_CONCURRENCY: String(concurrency) }, { dataDir: s.dataDir }),
    pino({ level: 'silent' }),
  );
  others.push(a);
  return a;
}

async function deployment(status: 'queued' | 'in_progress', lease: { owner: string | null; until: number | null }, updatedAt = nowIso()) {
  const ids = await s.db.selectFrom('deployments').select(['team_id', 'resource_id', 'server_id']).where('uuid', '=', w.deploymentUuid).executeTakeFirstOrThrow();
  const r = await s.db
    .insertInto('deployments')
    .values({
      ...ids,
      uuid: `lease${Math.random().toString(36).slice(2, 12)}`,
      kind: 'deploy',
      status,
      force: 0,
      logs: '',
      started_at: null,
      finished_at: null,
      lease_owner: lease.owner,
      lease_until: lease.until,
      created_at: updatedAt,
      updated_at: updatedAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return r.id;
}
const row = (id: number) => s.db.selectFrom('deployments').select(['status', 'lease_owner', 'lease_until']).where('id', '=', id).executeTakeFirstOrThrow();

describe('job leases', () => {
  it('a sweep takes over the jobs of a dead instance by the restart rules, and only those', async () => {
    const past = Date.now() - 5_000;
    const future = Date.now() + 60_000;
    const cutOff = await deployment('in_progress', { owner: 'dead-instance', until: past });
    const waiting = await deployment('queued', { owner: 'dead-instance', until: past });
    const alive = await deployment('in_progress', { owner: 'live-instance', until: future });
    const aliveQueued = await deployment('queued', { owner: 'live-instance', until: future });
    // Inserted and never queued by an instance that died at once: taken only once it is old.
    const fresh = await deployment('queued', { owner: null, until: null });
    const orphan = await deployment('queued', { owner: null, until: null }, new Date(Date.now() - 120_000).toISOString());

    const b = instance();
    await b.jobs.sweep();
    expect(await row(cutOff)).toMatchObject({ status: 'failed', lease_owner: b.jobs.instanceId });
    // Queued again on b, which runs it (this world's servers have no engine: it ends at once).
    for (const id of [waiting, orphan]) {
      await until(`deployment ${id} to run on b`, async () => ((await row(id)).status !== 'queued' ? true : undefined), 15_000);
      expect((await row(id)).lease_owner).toBe(b.jobs.instanceId);
    }
    expect(await row(alive)).toMatchObject({ status: 'in_progress', lease_owner: 'live-instance' });
    expect(await row(aliveQueued)).toMatchObject({ status: 'queued', lease_owner: 'live-instance' });
    expect(await row(fresh)).toMatchObject({ status: 'queued', lease_owner: null });
  });

  it('two instances sweeping at once claim each stale job once', async () => {
    const ids = await Promise.all(Array.from({ length: 6 }, () => deployment('in_progress', { owner: 'gone', until: Date.now() - 1_000 })));
    const [b, c] = [instance(), instance()];
    await Promise.all([b.jobs.sweep(), c.jobs.sweep()]);
    const owners = await Promise.all(ids.map(async (id) => (await row(id)).lease_owner));
    for (const id of ids) expect((await row(id)).status).toBe('failed');
    for (const o of owners) expect([b.jobs.instanceId, c.jobs.instanceId]).toContain(o);
  });

  it('a living instance renews the leases of the jobs it holds, and only those; stop() hands back what has not started', async () => {
    const { server_id } = await s.db.selectFrom('deployments').select('server_id').where('uuid', '=', w.deploymentUuid).executeTakeFirstOrThrow();
    const b = instance(1);
    // Another living instance's job holds the server's one slot: b's own waits in its queue.
    const blocker = await deployment('in_progress', { owner: 'live-instance', until: Date.now() + 60_000 });
    const mine = await deployment('queued', { owner: b.jobs.instanceId, until: Date.now() + 500 });
    // b's name on a row it does not hold (its job ended here but the last write was lost): not kept alive.
    const stranded = await deployment('in_progress', { owner: b.jobs.instanceId, until: Date.now() + 500 });
    const strandedUntil = (await row(stranded)).lease_until!;
    await b.jobs.start();
    await b.jobs.enqueue(mine, server_id, false);
    await until('the lease to be renewed', async () => ((await row(mine)).lease_until! > Date.now() + 600 ? true : undefined), 5_000);
    expect(await row(mine)).toMatchObject({ status: 'queued', lease_owner: b.jobs.instanceId });
    expect((await row(stranded)).lease_until).toBe(strandedUntil);
    await b.jobs.stop();
    expect(await row(mine)).toMatchObject({ status: 'queued', lease_until: 0 });
    await s.db.updateTable('deployments').set({ status: 'finished' }).where('id', 'in', [blocker, mine, stranded]).execute();
  });
});
