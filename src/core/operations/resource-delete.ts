import { z } from 'zod';
import { BerthError } from '../../errors.js';
import { answerBound, follow, followSchema, followText } from '../answer-bound.js';
import { ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { uuidParam } from '../validators.js';
import { perCollection } from './resource-common.js';
import type { Collection } from '../model/kinds.js';

/** A query flag as Coolify sends it (`true`/`false`), or a JSON boolean over MCP; Coolify's default is true. */
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).optional();

const WHAT: Record<Collection, string> = { applications: 'Application', databases: 'Database', services: 'Service' };
/** What goes with a resource before its records (a database's backups go with its volumes). */
const REMOVED: Record<Collection, string> = {
  applications: 'its container on the server, its volumes',
  databases: 'its container, its volumes and backups',
  services: 'its containers, its volumes',
};

/**
 * Delete as Coolify deletes: the resource's containers on its engine, its volumes and backup
 * volume (delete_volumes), berth-made networks nothing else uses (delete_connected_networks) and
 * the engine's dangling images (docker_cleanup), then its records. berth keeps no configuration
 * files on servers, so delete_configurations has nothing more to remove. When the engine cannot
 * be reached the resource stays, marked `deleting`, and berth retries until it can.
 */
export function deleteOperation(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  return defineOperation({
    name: `delete_${singular}`,
    title: `Delete ${one}`,
    description: `Delete ${one}: ${REMOVED[collection]} (unless delete_volumes is false), then its records.`,
    summary: `Delete ${one}: its containers on the engine, its volumes unless delete_volumes=false, then its records.`,
    permission: 'write',
    toolset,
    input: () => z.strictObject({ uuid: uuidParam, delete_configurations: flag, delete_volumes: flag, docker_cleanup: flag, delete_connected_networks: flag }),
    output: () => z.object({ message: z.string(), removed: z.array(z.string()).optional(), follow: followSchema.optional() }),
    annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: true },
    http: { method: 'DELETE', path: `/api/v1/${collection}/{uuid}` },
    async run(ctx, i) {
      const { db, caller, jobs, logger } = ctx;
      const bound = answerBound(ctx);
      const r = await ownedResource(db, i.uuid, caller.teamId, kinds);
      if (r.status === 'migrating') throw new BerthError('conflict', { message: `The ${singular} is being migrated; delete it when the migration has finished.` });
      // The resource is marked deleting before the engine is asked: past the answer bound the
      // removal goes on, and an instance that dies leaves the mark, which the deletion tick retries.
      const work = jobs.deleteResource(r.id, { volumes: i.delete_volumes ?? true, networks: i.delete_connected_networks ?? true, cleanup: i.docker_cleanup ?? true });
      const w = await bound.wait(work, async () => ({ message: `deleting ${r.uuid}: ${bound.seconds()} s` }));
      if (!w.ended) {
        work.catch((err: Error) => logger.warn({ err: err.message, resource: r.uuid }, 'deletion failed after its answer; the deletion tick retries it'));
        const f = follow.resource(collection, r.uuid);
        const message = `${WHAT[collection]} deletion goes on after ${bound.seconds()} s: it stays listed as deleting until its engine has removed it; ${followText(f)}.`;
        bound.finish({ message });
        return { message, follow: f };
      }
      const result = w.value;
      if (!result.done) {
        return {
          message: `${WHAT[collection]} deletion started, but its server's engine could not be reached (${result.error}). It stays listed as deleting, and berth removes it once the engine answers.`,
        };
      }
      return { message: `${WHAT[collection]} deleted.`, ...(result.log.length ? { removed: result.log } : {}) };
    },
  });
}
