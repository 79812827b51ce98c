/**
 * An application's copy on another server, as that server's proxy and engine watcher read the
 * records (on whichever store the run uses; PostgreSQL with BERTH_TEST_STORE=postgres): the copy's
 * server routes the application's domains to the copy's container, and its watcher follows the
 * copy; neither once the destination is removed or the application is being deleted. The real
 * proxy and watcher on real engines: test/e2e/copies-domains.test.ts, test/e2e/additional-destinations.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyRows } from '../../src/engine/additional-destinations.js';
import { proxyRoutes } from '../../src/engine/proxy.js';
import { setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
}, 60_000);
afterAll(() => c?.stop());

describe('a copy in its server’s routes and watch', () => {
  it('routes and watches the copy on its server only while it is attached and the application is not being deleted', async () => {
    const { appUuid, destination2Uuid } = c.w;
    const db = c.s.db;
    expect((await c.api('PATCH', `/applications/${appUuid}`, c.write, { domains: 'http://copy-route.test' })).status).toBe(200);
    const app = await db
      .selectFrom('resources as r')
      .innerJoin('destinations as d', 'd.id', 'r.destination_id')
      .select(['r.id', 'd.server_id'])
      .where('r.uuid', '=', appUuid)
      .executeTakeFirstOrThrow();
    const two = await db.selectFrom('destinations').select(['id', 'server_id']).where('uuid', '=', destination2Uuid).executeTakeFirstOrThrow();
    const routedOn = async (serverId: number) => (await proxyRoutes(db, serverId)).filter((r) => r.host === 'copy-route.test').map((r) => r.upstream);
    const watchedOn = async (serverId: number) => (await copyRows(db).where('a.server_id', '=', serverId).execute()).map((r) => [r.uuid, r.destination_id]);

    expect(await routedOn(app.server_id)).toEqual([appUuid]);
    expect(await routedOn(two.server_id)).toEqual([]);
    expect(await watchedOn(two.server_id)).toEqual([]);

    expect((await c.api('POST', `/applications/${appUuid}/destinations`, c.write, { destination_uuid: destination2Uuid })).status).toBe(201);
    expect(await routedOn(two.server_id)).toEqual([appUuid]);
    expect(await routedOn(app.server_id)).toEqual([appUuid]);
    expect(await watchedOn(two.server_id)).toEqual([[appUuid, two.id]]);
    expect(await watchedOn(app.server_id)).toEqual([]);

    // Being deleted: routed and watched nowhere (the primary's route goes the same way).
    await db.updateTable('resources').set({ deleting: '{}' }).where('id', '=', app.id).execute();
    expect(await routedOn(two.server_id)).toEqual([]);
    expect(await watchedOn(two.server_id)).toEqual([]);
    await db.updateTable('resources').set({ deleting: null }).where('id', '=', app.id).execute();

    expect((await c.api('DELETE', `/applications/${appUuid}/destinations/${destination2Uuid}`, c.write)).status).toBe(200);
    expect(await routedOn(two.server_id)).toEqual([]);
    expect(await watchedOn(two.server_id)).toEqual([]);
    expect(await routedOn(app.server_id)).toEqual([appUuid]);
  });
});
