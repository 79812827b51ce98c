import type { Logger } from 'pino';
import type { DeploymentKind } from '../core/model/deployment.js';
import type { Db } from '../store/db.js';
import type { Runtime } from '../core/runtime.js';
import { volumeName } from '../core/model/volumes.js';

/** What of the job runner queueing a copy's deployment needs. */
interface Queue {
  queueDeployment(d: { teamId: number; resourceId: number; serverId: number; kind: DeploymentKind; force: boolean }): Promise<{ uuid: string }>;
}

/**
 * After an application's deployment (deploy, start, stop, restart) finished on its primary
 * server: the same kind of deployment for each of its additional destinations, each on its own
 * server's queue (the per-server rules of server-queues.ts), as Coolify queues one per additional
 * server once the primary's is done. Never waited for here (a job waiting for another queue could
 * wait for ever); a queue that is full is said in the primary's log, the copy is then deployed by
 * the next deploy. The uuids queued.
 */
export async function queueCopies(db: Db, jobs: Queue, logger: Logger, deploymentId: number, log: (line: string) => Promise<void>): Promise<string[]> {
  const d = await db
    .selectFrom('deployments as d')
    .innerJoin('resources as r', 'r.id', 'd.resource_id')
    .innerJoin('destinations as p', 'p.id', 'r.destination_id')
    .select(['d.team_id', 'd.resource_id', 'd.server_id', 'd.kind', 'd.force', 'd.rollback_tag', 'd.pull_request_id', 'p.server_id as primary_server_id'])
    .where('d.id', '=', deploymentId)
    .executeTakeFirst();
  // A copy's own deployment (or one whose resource moved meanwhile) queues nothing more; a preview runs on the primary's server only.
  if (!d || d.server_id !== d.primary_server_id || d.pull_request_id > 0) return [];
  const copies = await db.selectFrom('application_destinations').select('server_id').where('resource_id', '=', d.resource_id).orderBy('id').execute();
  const queued: string[] = [];
  for (const c of copies) {
    try {
      const q = await jobs.queueDeployment({ teamId: d.team_id, resourceId: d.resource_id, serverId: c.server_id, kind: d.kind as DeploymentKind, force: d.force === 1 });
      queued.push(q.uuid);
    } catch (err) {
      logger.warn({ err: (err as Error).message, deploymentId }, 'could not queue a copy on an additional destination');
      await log(`could not queue the copy on an additional destination: ${(err as Error).message}`).catch(() => undefined);
    }
  }
  if (queued.length) await log(`queued on the additional destinations: ${queued.join(', ')}`).catch(() => undefined);
  return queued;
}

/**
 * Removes an application's copies from their servers (containers, and its volumes there when
 * `volumes`), and that server's proxy stops routing its domains: the delete of the application,
 * before its records go. Throws when a server cannot be reached, so the delete is retried as the
 * primary's part is. The log lines.
 */
export async function removeCopies(db: Db, runtime: Pick<Runtime, 'removeLeftovers' | 'syncProxy'>, resourceId: number, volumes: boolean): Promise<string[]> {
  const r = await db.selectFrom('resources').select('uuid').where('id', '=', resourceId).executeTakeFirst();
  if (!r) return [];
  const copies = await db.selectFrom('application_destinations').select('server_id').where('resource_id', '=', resourceId).execute();
  if (!copies.length) return [];
  const names = volumes
    ? (await db.selectFrom('storages').select(['name', 'engine_volume']).where('resource_id', '=', resourceId).execute()).map((s) => s.engine_volume ?? volumeName(r.uuid, s.name))
    : [];
  const out: string[] = [];
  for (const c of copies) {
    out.push(...(await runtime.removeLeftovers(c.server_id, r.uuid, names)));
    // Marked deleting, so its domains leave that server's proxy too; a proxy that fails is said, never fails the delete.
    await runtime.syncProxy(c.server_id, { log: async (line) => void out.push(line) }).catch((err) => out.push(`could not update the proxy: ${(err as Error).message}`));
  }
  return out;
}
