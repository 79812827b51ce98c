import type { ResourceObservation } from '../../core/observed-status.js';
import type { Db } from '../../store/db.js';
import type { EngineClient } from '../engine-client.js';
import { healthcheckSpec } from '../../core/runtime-fields.js';
import type { ApplicationConfig } from '../../core/model/application.js';
import { observeService } from './index.js';

/**
 * The watcher's look at a resource on a swarm destination: its service's tasks instead of
 * containers by name (null: the destination is standalone, look as ever). Read from the records
 * the watcher already holds plus the destination's type, so no plan is made on every event.
 */
export async function swarmObservation(
  db: Db,
  engine: EngineClient,
  r: { uuid: string; kind: string; config: string; destination_id: number },
  wanted: 'running' | 'exited',
  signal?: AbortSignal,
): Promise<ResourceObservation | null> {
  const d = await db.selectFrom('destinations').select('type').where('id', '=', r.destination_id).executeTakeFirst();
  if (d?.type !== 'swarm' || r.kind !== 'application') return null;
  const c = JSON.parse(r.config) as ApplicationConfig;
  return observeService(engine, r.uuid, healthcheckSpec(c, c.ports_exposes) !== undefined, wanted, signal);
}
