import type { Transaction } from 'kysely';
import type { Db } from '../store/db.js';
import type { Database } from '../store/schema.js';
import { volumeName } from './model/volumes.js';

/**
 * What a migration leaves once it has switched. On a cross-server move's source: the resource's
 * (stopped) containers there, and the source copies of the volumes whose data moved. And the
 * copy's helper containers, on both servers: the switch's instance removes them right after the
 * commit, so they are left only when it dies in between (and no listing would show them: they
 * carry the migration's label, not the resource's). Recorded on the migration in the switch's own
 * transaction, removed right after, and retried by the job sweep until the engines answer, so a
 * migrated resource leaves nothing behind.
 */
export interface Leftovers {
  /** The source server, where the resource's containers and moved volumes are left; null when both destinations are on one server. */
  server_id: number | null;
  resource_uuid: string;
  volumes: string[];
  /** Servers the copy's helpers ran on. Absent in records written before it existed: the source then. */
  helpers_on?: number[];
}

/**
 * The leftovers of a migration about to switch (call inside the switch's transaction, before the
 * storages change): null when nothing can be left (both destinations on one server, where the
 * next deploy replaces the container in place, and no copy ran). `movedStorages` are the storages
 * whose data was copied: their source volumes go; the others' data stays where it is
 * (migrate_volumes false keeps it). `copied`: the volumes were copied live, by helpers.
 */
export async function sourceLeftovers(
  trx: Transaction<Database> | Db,
  m: { resource_id: number; from_destination_id: number; to_destination_id: number },
  movedStorages: number[],
  copied: boolean,
): Promise<string | null> {
  const dests = await trx.selectFrom('destinations').select(['id', 'server_id']).where('id', 'in', [m.from_destination_id, m.to_destination_id]).execute();
  const from = dests.find((d) => d.id === m.from_destination_id)?.server_id;
  const to = dests.find((d) => d.id === m.to_destination_id)?.server_id;
  if (from === undefined || to === undefined || (from === to && !copied)) return null;
  const r = await trx.selectFrom('resources').select('uuid').where('id', '=', m.resource_id).executeTakeFirstOrThrow();
  // A storage that never moved has no engine_volume: its volume has the conventional name.
  const volumes =
    from !== to && movedStorages.length
      ? (await trx.selectFrom('storages').select(['engine_volume', 'name']).where('id', 'in', movedStorages).execute()).map((s) => s.engine_volume ?? volumeName(r.uuid, s.name))
      : [];
  const helpers_on = copied ? [...new Set([from, to])] : [];
  return JSON.stringify({ server_id: from === to ? null : from, resource_uuid: r.uuid, volumes, helpers_on } satisfies Leftovers);
}
