import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import type { SharedScope } from '../store/schema-shared-variables.js';

/**
 * What "production" means for the production_env approval rule, written once: an environment
 * named production (any case). A variable is in production when a resource in such an
 * environment reads it at its next deploy.
 */
const PRODUCTION = 'production';

/** The team's resources that sit in a production environment. */
const productionResources = (db: Db, teamId: number) =>
  db.selectFrom('resources as r').innerJoin('environments as e', 'e.id', 'r.environment_id').select('r.id').where('r.team_id', '=', teamId).where(sql<string>`lower(e.name)`, '=', PRODUCTION).limit(1);

/** Whether a resource's own variables are in production: the resource sits in a production environment. */
export async function resourceInProduction(db: Db, teamId: number, uuid: unknown): Promise<boolean> {
  if (typeof uuid !== 'string') return false;
  return (await productionResources(db, teamId).where('r.uuid', '=', uuid).executeTakeFirst()) !== undefined;
}

/**
 * Whether a shared variable's scope reaches production: an environment that is production itself
 * (whatever it holds yet), or a team, project or server with a resource in a production
 * environment (those resources read the variable as {{team|project|server.KEY}}).
 */
export async function sharedScopeInProduction(db: Db, teamId: number, type: SharedScope, scopeId: number): Promise<boolean> {
  if (type === 'environment') {
    const e = await db.selectFrom('environments').select('id').where('id', '=', scopeId).where(sql<string>`lower(name)`, '=', PRODUCTION).executeTakeFirst();
    return e !== undefined;
  }
  let q = productionResources(db, teamId);
  if (type === 'project') q = q.where('e.project_id', '=', scopeId);
  else if (type === 'server') q = q.where('r.destination_id', 'in', db.selectFrom('destinations').select('id').where('server_id', '=', scopeId));
  return (await q.executeTakeFirst()) !== undefined;
}
