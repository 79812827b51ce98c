import { SERVER_ENGINE_COLUMNS, type ServerEngine } from '../core/runtime.js';
import { aggregate, MISSING, observeContainer, type ContainerObservation } from '../core/observed-status.js';
import { isBuilt, type ApplicationConfig } from '../core/model/application.js';
import { nowIso, type Db } from '../store/db.js';
import type { EngineClient } from './engine-client.js';
import { NotFoundError } from './engine-errors.js';
import { containerNames, engineKindOf, planResource } from './plan.js';
import { kindFor } from './kinds.js';

/**
 * An application's copies on its additional destinations (docs/decisions/additional-destinations.md),
 * as the runtime sees them. A copy is run by a deployment of its own, queued on the copy's server
 * (the deployment's `server_id`) after the primary's finished; this file says which copy a
 * deployment is for and records what runs there. The application's own status columns stay the
 * primary's: a copy's status lives on its `application_destinations` row.
 */

/** The additional destination a deployment runs on, or undefined when it is the primary's. */
export async function copyOf(db: Db, d: { resource_id: number; server_id: number }): Promise<{ destinationId: number; server: ServerEngine } | undefined> {
  const row = await db.selectFrom('application_destinations as a').select(['a.destination_id']).where('a.resource_id', '=', d.resource_id).where('a.server_id', '=', d.server_id).executeTakeFirst();
  const primary = await db.selectFrom('resources as r').innerJoin('destinations as p', 'p.id', 'r.destination_id').select('p.server_id').where('r.id', '=', d.resource_id).executeTakeFirstOrThrow();
  if (primary.server_id === d.server_id) return undefined;
  // Queued for a copy that was removed meanwhile: nothing of it is to run there.
  if (!row) throw new Error('This server is no longer one of the application’s additional destinations; nothing was done.');
  const server = await db
    .selectFrom('servers')
    .select([...SERVER_ENGINE_COLUMNS])
    .where('id', '=', d.server_id)
    .executeTakeFirstOrThrow();
  return { destinationId: row.destination_id, server };
}

/**
 * A built application's image is made on the primary's engine (its tag is the deployment's uuid);
 * a copy runs that same image. When the copy's engine lacks it, it is carried over from the
 * primary's engine (save there, load here) before the copy's containers are made.
 */
export async function carryBuiltImage(
  db: Db,
  resourceId: number,
  engine: EngineClient,
  primary: () => Promise<EngineClient>,
  log: (line: string) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const r = await db.selectFrom('resources').select(['kind', 'config']).where('id', '=', resourceId).executeTakeFirstOrThrow();
  if (r.kind !== 'application') return;
  const c = JSON.parse(r.config) as ApplicationConfig;
  if (!isBuilt(c)) return;
  const ref = `${c.docker_registry_image_name}:${c.docker_registry_image_tag}`;
  try {
    await engine.inspectImage(ref, { signal });
    return;
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  await log(`copying the built image ${ref} from the primary server`);
  const from = await primary();
  await engine.loadImage(await from.saveImage(ref, { signal }), { signal });
  await log(`copied ${ref}`);
}

/** A copy as it is looked at: the application's row and the copy's destination. */
export interface WatchedCopy {
  id: number;
  uuid: string;
  kind: string;
  config: string;
  /** What berth last asked of the application (the primary's deployment sets it for all). */
  status: string;
  team_id: number;
  destination_id: number;
  destination_type: string;
  observed_status: string | null;
}

/** The copies of applications not being deleted (narrowed by the caller: a server's, one application's). */
export function copyRows(db: Db) {
  return db
    .selectFrom('application_destinations as a')
    .innerJoin('resources as r', 'r.id', 'a.resource_id')
    .innerJoin('destinations as d', 'd.id', 'a.destination_id')
    .select(['r.id', 'r.uuid', 'r.kind', 'r.config', 'r.status', 'r.team_id', 'a.destination_id', 'd.type as destination_type', 'a.observed_status'])
    .where('r.deleting', 'is', null);
}

/**
 * Looks at a copy's containers on its engine (after its deployment, and when the engine watcher
 * of its server sees them change) and stores the status on its row; the status.
 */
export async function observeCopy(db: Db, engine: EngineClient, c: WatchedCopy, signal?: AbortSignal): Promise<string> {
  const wanted = c.status === 'running' ? 'running' : 'exited';
  const kind = engineKindOf(c.destination_type);
  let status: string;
  if (kind !== 'standalone') {
    status = (await kindFor(kind).observe(engine, await planResource(db, c.id, { destinationId: c.destination_id }), wanted, signal)).status;
  } else {
    const containers: Record<string, ContainerObservation> = {};
    for (const name of containerNames(c)) {
      try {
        containers[name] = observeContainer(await engine.inspectContainer(name, { signal }), wanted);
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        containers[name] = { ...MISSING };
      }
    }
    status = aggregate(containers).status;
  }
  await db
    .updateTable('application_destinations')
    .set({ observed_status: status, observed_at: nowIso(), updated_at: nowIso() })
    .where('resource_id', '=', c.id)
    .where('destination_id', '=', c.destination_id)
    .execute();
  return status;
}

/** observeCopy of one application's copy on one destination (after that copy's deployment). */
export async function observeCopyOf(db: Db, engine: EngineClient, resourceId: number, destinationId: number): Promise<string | undefined> {
  const c = await copyRows(db).where('a.resource_id', '=', resourceId).where('a.destination_id', '=', destinationId).executeTakeFirst();
  return c && observeCopy(db, engine, c);
}
