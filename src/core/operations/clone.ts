import { z } from 'zod';
import { copiedMagicValue } from '../compose-variables.js';
import { validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { atomically } from '../../store/atomic.js';
import { owned, ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { name, uuidParam } from '../validators.js';
import { stamps } from './common.js';
import { perCollection } from './resource-common.js';
import type { Collection } from '../model/kinds.js';

const TITLE: Record<Collection, string> = { applications: 'Application', databases: 'Database', services: 'Service' };

/**
 * Coolify's clone: a copy of a resource on a destination of the team, in the same environment,
 * with its settings, variables, volumes (new, empty engine volumes: never the source's), scheduled
 * tasks and tags;
 * stopped, not deployed. A database keeps its credentials. Copying volume data is not offered yet.
 */
export function cloneOperation(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  return defineOperation({
    name: `clone_${singular}`,
    title: `Clone ${one}`,
    description: `Copy ${one} onto a destination (destination_uuid from list_destinations): settings, variables, volumes (new and empty) and tags, in the same environment; name optional. The copy is not deployed.`,
    summary: `Copy ${one} (settings, variables, volumes, tags) onto a destination of the team; the copy has new, empty volumes and is not deployed.`,
    permission: 'write',
    toolset,
    input: () => z.strictObject({ uuid: uuidParam, destination_uuid: uuidParam, name: name.nullable().optional(), clone_volumes: z.boolean().optional() }),
    output: () => z.object({ uuid: z.string(), message: z.string() }),
    annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: false },
    storeOnly: true,
    http: { method: 'POST', path: `/api/v1/${collection}/{uuid}/clone`, status: 201 },
    async run({ db, caller }, i) {
      const r = await ownedResource(db, i.uuid, caller.teamId, kinds);
      const dest = await owned(db, 'destinations', i.destination_uuid, caller.teamId);
      if (i.clone_volumes) throw validationError({ clone_volumes: ['berth does not copy volume data on clone yet: the copy starts with empty volumes (migrate moves data between servers).'] });
      const uuid = newUuid();
      // atomically(), not db.transaction(): it joins the call's transaction (storeOnly), which a nested
      // transaction() cannot.
      await atomically(db, async (trx) => {
        const { id: _id, uuid: _uuid, created_at: _c, updated_at: _u, ...rest } = r;
        const { id } = await trx
          .insertInto('resources')
          .values({ ...rest, uuid, destination_id: dest.id, name: i.name ?? `${r.name}-clone`, status: 'exited', ...stamps() })
          .returning('id')
          .executeTakeFirstOrThrow();
        for (const e of await trx.selectFrom('environment_variables').selectAll().where('resource_id', '=', r.id).execute()) {
          const { id: _e, ...env } = e;
          await trx
            .insertInto('environment_variables')
            .values({ ...env, value: copiedMagicValue(env.key, env.value, r.uuid, uuid), uuid: newUuid(), resource_id: id, ...stamps() })
            .execute();
        }
        // New volumes named after the copy: the source's data is never shared.
        for (const s of await trx.selectFrom('storages').selectAll().where('resource_id', '=', r.id).execute()) {
          const { id: _s, ...storage } = s;
          await trx
            .insertInto('storages')
            .values({ ...storage, uuid: newUuid(), resource_id: id, engine_volume: null, ...stamps() })
            .execute();
        }
        // Scheduled tasks come along (as Coolify's clone does); the copy's first firing is its own.
        for (const t of await trx.selectFrom('scheduled_tasks').selectAll().where('resource_id', '=', r.id).execute()) {
          const { id: _t, ...task } = t;
          await trx
            .insertInto('scheduled_tasks')
            .values({ ...task, uuid: newUuid(), resource_id: id, last_due: null, ...stamps() })
            .execute();
        }
      });
      return { uuid, message: `${TITLE[collection]} cloned.` };
    },
  });
}
