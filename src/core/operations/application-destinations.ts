import { z } from 'zod';
import { BerthError, notFound, validationError } from '../../errors.js';
import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import { owned, ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { uuidParam } from '../validators.js';
import { READ, stamps } from './common.js';
import type { ResourceRow } from './resource-common.js';
import { volumeName } from '../model/volumes.js';
import { routeServer } from './server-proxy.js';

const serverRow = (db: Db, id: number) => db.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/**
 * Coolify's additional destinations (docs/decisions/additional-destinations.md): an application
 * also runs on other servers' destinations. Every deploy, start, stop and restart of it goes on to
 * each copy after the primary's (src/workers/destination-copies.ts); its delete removes them all.
 */

const destinationEntry = z.object({
  uuid: z.string(),
  name: z.string(),
  network: z.string(),
  server_uuid: z.string(),
  is_primary: z.boolean(),
  /** As the engine last said (a copy: after its last deployment); null: never seen. */
  status: z.string().nullable(),
});

/** An application's primary destination first, then its additional ones in the order added. */
export async function applicationDestinations(db: Db, r: Pick<ResourceRow, 'id' | 'destination_id' | 'observed_status'>): Promise<z.infer<typeof destinationEntry>[]> {
  const primary = await db
    .selectFrom('destinations as d')
    .innerJoin('servers as s', 's.id', 'd.server_id')
    .select(['d.uuid', 'd.name', 'd.network', 's.uuid as server_uuid'])
    .where('d.id', '=', r.destination_id)
    .executeTakeFirstOrThrow();
  const copies = await db
    .selectFrom('application_destinations as a')
    .innerJoin('destinations as d', 'd.id', 'a.destination_id')
    .innerJoin('servers as s', 's.id', 'a.server_id')
    .select(['d.uuid', 'd.name', 'd.network', 's.uuid as server_uuid', 'a.observed_status'])
    .where('a.resource_id', '=', r.id)
    .orderBy('a.id')
    .execute();
  return [{ ...primary, is_primary: true, status: r.observed_status }, ...copies.map(({ observed_status, ...c }) => ({ ...c, is_primary: false, status: observed_status }))];
}

const attached = () => new BerthError('conflict', { message: 'Destination is already attached.' });

export const applicationDestinationOperations = [
  defineOperation({
    name: 'list_application_destinations',
    title: 'List application destinations',
    description: "An application's primary destination and its additional ones (other servers it also runs on), each with its status.",
    summary: 'List the primary and additional destinations of an application.',
    permission: 'read',
    toolset: 'applications',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.array(destinationEntry),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/applications/{uuid}/destinations' },
    async run({ db, caller }, { uuid }) {
      return applicationDestinations(db, await ownedResource(db, uuid, caller.teamId, ['application']));
    },
  }),
  defineOperation({
    name: 'add_application_destination',
    title: 'Add an application destination',
    description: "Also run an application on another server's destination (one per server). Deploy it to start the copy there.",
    summary: 'Attach an additional destination (on another server) to an application.',
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ uuid: uuidParam, destination_uuid: uuidParam }),
    output: () => z.object({ message: z.string(), uuid: z.string() }),
    annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: false },
    http: { method: 'POST', path: '/api/v1/applications/{uuid}/destinations', status: 201 },
    async run(ctx, i) {
      const { db, caller, runtime } = ctx;
      const r = await ownedResource(db, i.uuid, caller.teamId, ['application']);
      const dest = await owned(db, 'destinations', i.destination_uuid, caller.teamId);
      const refuse = (message: string) => validationError({ destination_uuid: [message] });
      // A copy runs the same plan on the other engine: what the primary's placement refuses there (ports, host access) is refused now.
      const refusal = await runtime.placementRefusal(r.id, dest.id);
      if (refusal) throw refuse(refusal);
      await atomically(db, async (trx) => {
        const app = await trx
          .selectFrom('resources as r')
          .innerJoin('destinations as d', 'd.id', 'r.destination_id')
          .select(['r.destination_id', 'd.server_id', 'r.deleting', 'r.status'])
          .where('r.id', '=', r.id)
          .executeTakeFirst();
        if (!app) throw notFound();
        if (app.deleting !== null) throw new BerthError('conflict', { message: 'The application is being deleted.' });
        if (app.status === 'migrating') throw new BerthError('conflict', { message: 'The application is being migrated; add destinations when the migration has finished.' });
        if (app.destination_id === dest.id) throw refuse('Destination is already the primary destination.');
        const here = await trx.selectFrom('application_destinations').select(['destination_id']).where('resource_id', '=', r.id).where('server_id', '=', dest.server_id).executeTakeFirst();
        if (here?.destination_id === dest.id) throw attached();
        if (app.server_id === dest.server_id) throw refuse('Cannot attach a destination on the same server as the primary destination.');
        if (here) throw refuse('A destination on this server is already attached.');
        // The unique constraints decide a race: its loser is the same 409 (errors.ts UNIQUE_MESSAGES).
        await trx
          .insertInto('application_destinations')
          .values({ resource_id: r.id, destination_id: dest.id, server_id: dest.server_id, ...stamps() })
          .execute();
      });
      // The records are the routes: that server's proxy routes the domains to the copy (there once deployed).
      await routeServer(ctx, await serverRow(db, dest.server_id));
      return { message: 'Destination attached.', uuid: dest.uuid };
    },
  }),
  defineOperation({
    name: 'remove_application_destination',
    title: 'Remove an application destination',
    description: 'Stop running an application on an additional destination: its container there is removed (volumes stay unless delete_volumes).',
    summary: 'Detach an additional destination from an application, removing the copy there.',
    permission: 'write',
    toolset: 'applications',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        destination_uuid: uuidParam,
        delete_volumes: z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).optional(),
      }),
    output: () => z.object({ message: z.string(), removed: z.array(z.string()) }),
    annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: true },
    http: { method: 'DELETE', path: '/api/v1/applications/{uuid}/destinations/{destination_uuid}', query: ['delete_volumes'] },
    async run(ctx, i) {
      const { db, caller, runtime } = ctx;
      const r = await ownedResource(db, i.uuid, caller.teamId, ['application']);
      const dest = await owned(db, 'destinations', i.destination_uuid, caller.teamId);
      if (r.destination_id === dest.id) throw validationError({ destination_uuid: ['Cannot remove the primary destination.'] });
      const row = await db.selectFrom('application_destinations').select(['id', 'server_id']).where('resource_id', '=', r.id).where('destination_id', '=', dest.id).executeTakeFirst();
      if (!row) throw notFound();
      // The copy goes from its server first: an engine that cannot be reached leaves the row, so
      // the call can be repeated and nothing runs there that no record names.
      const volumes = i.delete_volumes
        ? (await db.selectFrom('storages').select(['name', 'engine_volume']).where('resource_id', '=', r.id).execute()).map((s) => s.engine_volume ?? volumeName(r.uuid, s.name))
        : [];
      const removed = await runtime.removeLeftovers(row.server_id, r.uuid, volumes);
      await db.deleteFrom('application_destinations').where('id', '=', row.id).execute();
      await routeServer(ctx, await serverRow(db, row.server_id));
      return { message: 'Destination detached.', removed };
    },
  }),
];
