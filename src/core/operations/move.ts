import { z } from 'zod';
import { nowIso } from '../../store/db.js';
import { BerthError } from '../../errors.js';
import { ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { uuidParam } from '../validators.js';
import { perCollection } from './resource-common.js';
import type { Collection } from '../model/kinds.js';

const TITLE: Record<Collection, string> = { applications: 'Application', databases: 'Database', services: 'Service' };

/**
 * Coolify's move: a resource goes to another environment (of any project of the team). Records
 * only: it keeps its server, containers and data, and nothing is redeployed.
 */
export function moveOperation(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  return defineOperation({
    name: `move_${singular}`,
    title: `Move ${one} to an environment`,
    description: `Move ${one} to another environment (environment_uuid, from list_environments of any of your projects). Records only: its server, containers and data stay; not to be confused with migrate, which changes servers.`,
    summary: `Move ${one} to another environment (environment_uuid, any project of the team); its server, containers and data stay.`,
    permission: 'write',
    toolset,
    input: () => z.strictObject({ uuid: uuidParam, environment_uuid: uuidParam }),
    output: () => z.object({ message: z.string(), uuid: z.string(), project_uuid: z.string(), environment_uuid: z.string() }),
    annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: false },
    http: { method: 'POST', path: `/api/v1/${collection}/{uuid}/move` },
    async run({ db, caller }, { uuid, environment_uuid }) {
      const r = await ownedResource(db, uuid, caller.teamId, kinds);
      // The environment is looked up through its project, inside the team: another team's is missing.
      const env = await db
        .selectFrom('environments as e')
        .innerJoin('projects as p', 'p.id', 'e.project_id')
        .select(['e.id', 'e.uuid', 'p.uuid as project_uuid'])
        .where('e.uuid', '=', environment_uuid)
        .where('p.team_id', '=', caller.teamId)
        .executeTakeFirst();
      if (!env) throw new BerthError('not_found');
      if (env.id === r.environment_id) throw new BerthError('conflict', { message: `${TITLE[collection]} is already in this environment.` });
      await db.updateTable('resources').set({ environment_id: env.id, updated_at: nowIso() }).where('id', '=', r.id).execute();
      return { message: `${TITLE[collection]} moved successfully.`, uuid, project_uuid: env.project_uuid, environment_uuid: env.uuid };
    },
  });
}
