import type { Logger } from 'pino';
import type { Leftovers } from '../core/migration-leftovers.js';
import type { Runtime } from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import { DELETE_RETRY_MS } from './deletions.js';

/** Removes a switched migration's leftovers (see core/migration-leftovers.ts); retried until the engines answer. */
export async function removeLeftovers(db: Db, runtime: Runtime, logger: Logger, migrationId: number): Promise<void> {
  const m = await db.selectFrom('migrations_jobs').select(['uuid', 'leftovers']).where('id', '=', migrationId).executeTakeFirst();
  if (!m?.leftovers) return;
  const l = JSON.parse(m.leftovers) as Leftovers;
  try {
    // The helpers first: they mount the source volumes about to go.
    for (const serverId of l.helpers_on ?? (l.server_id === null ? [] : [l.server_id])) await runtime.removeMigrationHelpers(serverId, m.uuid);
    const removed = l.server_id === null ? [] : await removeSourceLeftovers(db, runtime, { ...l, server_id: l.server_id });
    await db.updateTable('migrations_jobs').set({ leftovers: null, updated_at: nowIso() }).where('id', '=', migrationId).execute();
    if (removed.length) logger.info({ migration: m.uuid, removed }, 'migration: removed what the resource left on its source');
  } catch (err) {
    logger.warn({ migration: m.uuid, err: (err as Error).message }, 'migration: could not remove what it left behind; retrying later');
    await db.updateTable('migrations_jobs').set({ updated_at: nowIso() }).where('id', '=', migrationId).execute();
  }
}

/** The resource's containers and moved volumes on its old server, unless it has moved back there meanwhile. */
async function removeSourceLeftovers(db: Db, runtime: Runtime, l: Leftovers & { server_id: number }): Promise<string[]> {
  // Moved back meanwhile: what is there now is the resource itself, not a leftover.
  const back = await db
    .selectFrom('resources as r')
    .innerJoin('destinations as d', 'd.id', 'r.destination_id')
    .select('r.id')
    .where('r.uuid', '=', l.resource_uuid)
    .where('d.server_id', '=', l.server_id)
    .executeTakeFirst();
  if (back) return [];
  const named = new Set(
    (
      await db
        .selectFrom('storages')
        .select('engine_volume')
        .where('engine_volume', 'in', l.volumes.length ? l.volumes : [''])
        .execute()
    ).map((s) => s.engine_volume),
  );
  return runtime.removeLeftovers(
    l.server_id,
    l.resource_uuid,
    l.volumes.filter((v) => !named.has(v)),
  );
}

/** Leftovers whose removal failed, tried again (any instance may; removal is idempotent). */
export async function retryLeftovers(db: Db, runtime: Runtime, logger: Logger): Promise<void> {
  const due = new Date(Date.now() - DELETE_RETRY_MS).toISOString();
  const rows = await db.selectFrom('migrations_jobs').select('id').where('leftovers', 'is not', null).where('status', '=', 'finished').where('updated_at', '<', due).orderBy('id').limit(20).execute();
  for (const r of rows) await removeLeftovers(db, runtime, logger, r.id);
}
