import type { Transaction } from 'kysely';
import type { Db } from '../store/db.js';
import type { Database } from '../store/schema.js';
import { volumeName } from './model/volumes.js';

/**
 * What a cross-server migration leaves on its source once it has switched: the resource's
 * (stopped) containers there, and the source copies of the volumes whose data moved. Recorded on
 * the migration in the switch's own transaction, removed right after, and retried by the job
 * sweep until the source answers, so a migrated resource leaves nothing behind on the engine.
 */
export interface Leftovers {
  server_id: number;
  resource_uuid: string;
  volumes: string[];
}

/**
 * The leftovers of a migration about to switch (call inside the switch's transaction, before the
 * storages change): null when both destinations are on one server (the next deploy replaces the
 * container in place). `movedStorages` are the storages whose data was copied: their source
 * volumes go; the others' data stays where it is (migrate_volumes false keeps it).
 */
export async function sourceLeftovers(
  trx: Transaction<Database> | Db,
  m: { resource_id: number; from_destination_id: number; to_destination_id: number },
  movedStorages: number[],
): Promise<string | null> {
  const dests = await trx.selectFrom('destinations').select(['id', 'server_id']).where('id', 'in', [m.from_destination_id, m.to_destination_id]).execute();
  const from = dests.find((d) => d.id === m.from_destination_id)?.server_id;
  const to = dests.find((d) => d.id === m.to_destination_id)?.server_id;
  if (from === undefined || from === to) return null;
  const r = await trx.selectFrom('resources').select('uuid').where('id', '=', m.resource_id).executeTakeFirstOrThrow();
  // A storage that never moved has no engine_volume: its volume has the conventional name.
  const volumes = movedStorages.length
    ? (await trx.selectFrom('storages').select(['engine_volume', 'name']).where('id', 'in', movedStorages).execute()).map((s) => s.engine_volume ?? volumeName(r.uuid, s.name))
    : [];
  return JSON.stringify({ server_id: from, resource_uuid: r.uuid, volumes } satisfies Leftovers);
}
