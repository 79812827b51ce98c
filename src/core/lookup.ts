import type { Db } from '../store/db.js';
import type { Database, ResourceKind } from '../store/schema.js';
import { notFound } from '../errors.js';

type Owned =
  | 'private_keys'
  | 'servers'
  | 'destinations'
  | 'projects'
  | 'resources'
  | 'deployments'
  | 'migrations_jobs'
  | 's3_storages'
  | 'cloud_init_scripts'
  | 'tags'
  | 'cloud_tokens'
  | 'github_apps';

/**
 * A row of the caller's team by uuid. Another team's row and a missing one are the same
 * "Resource not found.", because the team is part of the query, not a check after it.
 */
export async function owned<T extends Owned>(db: Db, table: T, uuid: string, teamId: number) {
  const row = await db
    .selectFrom(table as Owned)
    .selectAll()
    .where('uuid', '=', uuid)
    .where('team_id', '=', teamId)
    .executeTakeFirst();
  if (!row) throw notFound();
  return row as unknown as Database[T] extends infer R ? { [K in keyof R]: R[K] extends import('kysely').Generated<infer G> ? G : R[K] } : never;
}

/** A resource of a given kind set (applications, databases, services) by uuid, team-scoped. */
export async function ownedResource(db: Db, uuid: string, teamId: number, kinds: readonly ResourceKind[]) {
  const row = await owned(db, 'resources', uuid, teamId);
  if (!kinds.includes(row.kind)) throw notFound();
  return row;
}

/** An environment of a project, by name or uuid (Coolify looks up by name first). */
export async function ownedEnvironment(db: Db, projectId: number, ref: { name?: string; uuid?: string }) {
  let q = db.selectFrom('environments').selectAll().where('project_id', '=', projectId);
  q = ref.uuid ? q.where('uuid', '=', ref.uuid) : q.where('name', '=', ref.name ?? '');
  const env = await q.executeTakeFirst();
  if (!env) throw notFound();
  return env;
}
