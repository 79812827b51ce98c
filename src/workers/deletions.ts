import type { Logger } from 'pino';
import type { RemoveOptions, Runtime } from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import { removeCopies } from './destination-copies.js';

/** How often a delete whose engine could not be reached is tried again. */
export const DELETE_RETRY_MS = 10_000;

/**
 * The engine part of a delete, then the records. The resource is marked as being deleted (with
 * its flags) before anything is removed, so a failure (the engine unreachable, berth stopped
 * midway) leaves a record that says so and is retried, never a container nobody knows about.
 * True when the resource is gone; false when the engine part failed and will be retried.
 */
export async function finishDeletion(db: Db, runtime: Runtime, logger: Logger, resourceId: number): Promise<{ done: boolean; error?: string; log: string[] }> {
  const r = await db.selectFrom('resources').select(['uuid', 'deleting']).where('id', '=', resourceId).executeTakeFirst();
  if (!r?.deleting) return { done: true, log: [] };
  const flags = JSON.parse(r.deleting) as RemoveOptions;
  let log: string[];
  // A removal that takes a while (a swarm's tasks leaving their network) keeps its mark fresh, so
  // the retry tick does not start a second one beside it (which would take the lines it reports).
  const beat = setInterval(
    () =>
      void db
        .updateTable('resources')
        .set({ updated_at: nowIso() })
        .where('id', '=', resourceId)
        .execute()
        .catch(() => undefined),
    DELETE_RETRY_MS / 4,
  );
  beat.unref();
  try {
    log = await runtime.removeResource(resourceId, flags);
    // additional destinations: every copy goes too, before the records that name them
    log.push(...(await removeCopies(db, runtime, resourceId, flags.volumes)));
    // previews: their containers went with the application's (its label); their volumes and images go here
    for (const p of await db.selectFrom('application_previews').select('pull_request_id').where('resource_id', '=', resourceId).execute())
      log.push(...(await runtime.removePreview(resourceId, p.pull_request_id, { volumes: flags.volumes })));
  } catch (err) {
    const error = (err as Error).message;
    logger.warn({ resource: r.uuid, err: error }, 'delete: the engine part failed; retrying later');
    await db.updateTable('resources').set({ updated_at: nowIso() }).where('id', '=', resourceId).execute();
    return { done: false, error, log: [] };
  } finally {
    clearInterval(beat);
  }
  await db.deleteFrom('resources').where('id', '=', resourceId).execute();
  if (log.length) logger.info({ resource: r.uuid, removed: log }, 'delete: removed from the engine');
  return { done: true, log };
}

/** Deletes whose engine part failed, tried again (any instance may; removal is idempotent). */
export async function retryDeletions(db: Db, runtime: Runtime, logger: Logger): Promise<void> {
  const due = new Date(Date.now() - DELETE_RETRY_MS).toISOString();
  const rows = await db.selectFrom('resources').select('id').where('deleting', 'is not', null).where('updated_at', '<', due).orderBy('id').limit(20).execute();
  for (const r of rows) {
    // Claimed in one statement: of two instances' ticks, one goes on.
    const claimed = await db.updateTable('resources').set({ updated_at: nowIso() }).where('id', '=', r.id).where('updated_at', '<', due).executeTakeFirst();
    if (claimed.numUpdatedRows > 0n) await finishDeletion(db, runtime, logger, r.id);
  }
}
