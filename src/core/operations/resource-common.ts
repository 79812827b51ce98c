import { z } from 'zod';
import type { Db } from '../../store/db.js';
import type { Selectable } from 'kysely';
import type { ResourceKind, ResourcesTable } from '../../store/schema.js';
import { notFound, validationError } from '../../errors.js';
import { owned, ownedEnvironment } from '../lookup.js';
import { uuidParam } from '../validators.js';
import { brief } from '../runtime-fields.js';
import { stamps } from './common.js';
import { KINDS_OF, SINGULAR, type Collection } from '../model/kinds.js';

export type ResourceRow = Selectable<ResourcesTable>;

export const TOOLSET_OF = { applications: 'applications', databases: 'databases', services: 'services' } as const;

/** One resource of a collection as tool texts name it, article and all. */
export const ONE_OF: Record<Collection, string> = { applications: 'an application', databases: 'a database', services: 'a service' };

/**
 * What an operation made per collection names and finds its resources by: the singular for tool
 * names, the kinds for lookups, its toolset, and `one` ('an application') for its texts.
 */
export const perCollection = (collection: Collection) => ({ singular: SINGULAR[collection], kinds: KINDS_OF[collection], toolset: TOOLSET_OF[collection], one: ONE_OF[collection] });

/** Where a new resource goes, as Coolify's create bodies name it. */
export const placementInput = {
  project_uuid: uuidParam,
  server_uuid: uuidParam,
  environment_name: z.string().min(1).max(255).optional(),
  environment_uuid: uuidParam.optional(),
  destination_uuid: uuidParam.optional(),
};

export interface Placement {
  environmentId: number;
  destinationId: number;
  /** The destination is a swarm's (a compose file runs there as a stack). */
  swarm?: boolean;
}

/**
 * Resolves project, environment, server and destination inside the caller's team. A reference
 * to another team's object is the same 404 as a missing one, and nothing is created.
 */
export async function resolvePlacement(
  db: Db,
  teamId: number,
  i: { project_uuid: string; server_uuid: string; environment_name?: string; environment_uuid?: string; destination_uuid?: string },
  /** What is placed: databases do not run on a swarm destination (docs/decisions/swarm.md). */
  kind: 'application' | 'database' | 'service' = 'application',
): Promise<Placement> {
  if (!i.environment_name && !i.environment_uuid) {
    throw validationError({ environment_name: ['You need to provide at least one of environment_name or environment_uuid.'] });
  }
  const project = await owned(db, 'projects', i.project_uuid, teamId);
  const env = await ownedEnvironment(db, project.id, { name: i.environment_name, uuid: i.environment_uuid });
  const server = await owned(db, 'servers', i.server_uuid, teamId);
  const destinations = await db.selectFrom('destinations').select(['id', 'uuid']).where('server_id', '=', server.id).orderBy('id').execute();
  let destinationId: number;
  if (i.destination_uuid) {
    const d = await owned(db, 'destinations', i.destination_uuid, teamId);
    if (d.server_id !== server.id) throw validationError({ destination_uuid: ['The destination is not on the given server.'] });
    destinationId = d.id;
  } else if (destinations.length === 1) {
    destinationId = destinations[0]!.id;
  } else if (destinations.length === 0) {
    throw validationError({ server_uuid: ['Server has no destinations.'] });
  } else {
    throw validationError({ destination_uuid: ['Server has multiple destinations and you do not set destination_uuid.'] });
  }
  const d = await db.selectFrom('destinations').select('type').where('id', '=', destinationId).executeTakeFirstOrThrow();
  if (kind === 'database' && d.type === 'swarm') throw validationError({ [i.destination_uuid ? 'destination_uuid' : 'server_uuid']: [SWARM_DATABASE_REFUSAL] });
  // A service (compose) on a swarm destination runs as a stack: its caller checks the compose file for what a stack cannot run.
  return { environmentId: env.id, destinationId, swarm: d.type === 'swarm' };
}

/** Why a database is not placed on a swarm destination. */
export const SWARM_DATABASE_REFUSAL = 'Databases do not run on a swarm destination in berth: a database is one container with its volume on one node; place it on a standalone destination.';

/** Fields every application, database and service shows, with the uuids of where it lives. */
export const placedSchema = {
  uuid: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  /** The engine's state in Coolify's words where berth manages the server (`running:healthy`, `restarting:unknown`, `exited`, ...); what was recorded where it does not. */
  status: z.string(),
  // Left out of MCP tool schemas for size (brief), still in every answer.
  restart_count: brief(z.number().int()),
  last_exit_code: brief(z.number().int().nullable()),
  /** When berth last looked at the engine for this resource (null: never). */
  observed_at: brief(z.string().nullable()),
  environment_id: z.number().int(),
  destination_id: z.number().int(),
  environment_uuid: z.string(),
  project_uuid: z.string(),
  destination_uuid: z.string(),
  server_uuid: z.string(),
  tags: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
};

/** Where a resource lives, by uuid: what placedView adds to its row. */
export interface Where {
  destination_uuid: string;
  server_uuid: string;
  environment_uuid: string;
  project_uuid: string;
}
/** The placements of a list's rows, read at once (placementsOf): a list of 2,000 is 2 statements, not 2,000. */
export type Placements = ReadonlyMap<string, Where>;
const placeKey = (r: Pick<ResourceRow, 'destination_id' | 'environment_id'>) => `${r.destination_id}:${r.environment_id}`;

/** At most this many ids in one `in (...)` (SQLite's and PostgreSQL's parameter limits are far above). */
const CHUNK = 500;
const chunks = <T>(xs: T[]): T[][] => Array.from({ length: Math.ceil(xs.length / CHUNK) }, (_, i) => xs.slice(i * CHUNK, (i + 1) * CHUNK));

/** The columns a resource's placed fields and its view read (applicationView): a list selects these and no more. */
export const VIEW_COLUMNS = [
  'uuid',
  'name',
  'description',
  'status',
  'observed_status',
  'deleting',
  'restart_count',
  'last_exit_code',
  'observed_at',
  'environment_id',
  'destination_id',
  'tags',
  'config',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof ResourceRow)[];
export type ViewRow = Pick<ResourceRow, (typeof VIEW_COLUMNS)[number]>;
type PlacedRow = Pick<ResourceRow, 'destination_id' | 'environment_id'>;

export async function placementsOf(db: Db, rows: readonly PlacedRow[]): Promise<Placements> {
  const dests = new Map<number, { destination_uuid: string; server_uuid: string }>();
  const envs = new Map<number, { environment_uuid: string; project_uuid: string }>();
  for (const ids of chunks([...new Set(rows.map((r) => r.destination_id))]))
    for (const d of await db
      .selectFrom('destinations as d')
      .innerJoin('servers as s', 's.id', 'd.server_id')
      .select(['d.id', 'd.uuid as destination_uuid', 's.uuid as server_uuid'])
      .where('d.id', 'in', ids)
      .execute())
      dests.set(d.id, { destination_uuid: d.destination_uuid, server_uuid: d.server_uuid });
  for (const ids of chunks([...new Set(rows.map((r) => r.environment_id))]))
    for (const e of await db
      .selectFrom('environments as e')
      .innerJoin('projects as p', 'p.id', 'e.project_id')
      .select(['e.id', 'e.uuid as environment_uuid', 'p.uuid as project_uuid'])
      .where('e.id', 'in', ids)
      .execute())
      envs.set(e.id, { environment_uuid: e.environment_uuid, project_uuid: e.project_uuid });
  const out = new Map<string, Where>();
  for (const r of rows) {
    const d = dests.get(r.destination_id);
    const e = envs.get(r.environment_id);
    if (d && e) out.set(placeKey(r), { destination_uuid: d.destination_uuid, server_uuid: d.server_uuid, environment_uuid: e.environment_uuid, project_uuid: e.project_uuid });
  }
  return out;
}

/** The views of a list's rows, their placements read once for all. */
export async function placedViews<T>(db: Db, rows: readonly ResourceRow[], view: (db: Db, r: ResourceRow, known: Placements) => Promise<T>): Promise<T[]> {
  const known = await placementsOf(db, rows);
  return Promise.all(rows.map((r) => view(db, r, known)));
}

/** The views of a list's rows built without a promise each (a list of 2,000 felt 2,000 awaits). */
export async function placedRows<R extends PlacedRow, T>(db: Db, rows: readonly R[], build: (r: R, where: Where) => T): Promise<T[]> {
  const known = await placementsOf(db, rows);
  return rows.map((r) => {
    const where = known.get(placeKey(r));
    if (!where) throw notFound();
    return build(r, where);
  });
}

export async function placedView(db: Db, r: ResourceRow, known?: Placements) {
  return placedFields(r, await placeOf(db, r, known));
}

/** Where a resource lives, from a list's placements or read for it alone. */
export async function placeOf(db: Db, r: ResourceRow, known?: Placements): Promise<Where> {
  const where = known
    ? known.get(placeKey(r))
    : await db
        .selectFrom('destinations as d')
        .innerJoin('servers as s', 's.id', 'd.server_id')
        .innerJoin('environments as e', (j) => j.on('e.id', '=', r.environment_id))
        .innerJoin('projects as p', 'p.id', 'e.project_id')
        .select(['d.uuid as destination_uuid', 's.uuid as server_uuid', 'e.uuid as environment_uuid', 'p.uuid as project_uuid'])
        .where('d.id', '=', r.destination_id)
        .executeTakeFirst();
  if (!where) throw notFound();
  return where;
}

/** The placed fields of a row: one literal, no spread (V8 builds and stringifies such objects several times faster). */
export function placedFields(r: Omit<ViewRow, 'config'>, where: Where) {
  return {
    uuid: r.uuid,
    name: r.name,
    description: r.description,
    status: displayStatus(r),
    restart_count: r.restart_count ?? 0,
    last_exit_code: r.last_exit_code,
    observed_at: r.observed_at,
    environment_id: r.environment_id,
    destination_id: r.destination_id,
    destination_uuid: where.destination_uuid,
    server_uuid: where.server_uuid,
    environment_uuid: where.environment_uuid,
    project_uuid: where.project_uuid,
    tags: JSON.parse(r.tags) as string[],
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/**
 * What a resource's status field says: being deleted or migrated, else what its engine was seen
 * doing, else (a server berth does not manage, or never looked at yet) what was recorded.
 */
export function displayStatus(r: Pick<ResourceRow, 'status' | 'observed_status' | 'deleting'>): string {
  if (r.deleting !== null) return 'deleting';
  if (r.status === 'migrating') return 'migrating';
  return r.observed_status ?? r.status;
}

/** The server a resource currently lives on. */
export async function serverOf(db: Db, r: Pick<ResourceRow, 'destination_id'>) {
  return db.selectFrom('destinations as d').innerJoin('servers as s', 's.id', 'd.server_id').selectAll('s').where('d.id', '=', r.destination_id).executeTakeFirstOrThrow();
}

export function config<T>(r: Pick<ResourceRow, 'config'>): T {
  return JSON.parse(r.config) as T;
}

/** The row of a new application, database or service: stopped, placed, with its own config. */
export function newResourceRow(r: { uuid: string; teamId: number; kind: ResourceKind; place: Placement; name: string; description?: string | null; tags?: string[] }, config: unknown) {
  return {
    uuid: r.uuid,
    team_id: r.teamId,
    kind: r.kind,
    environment_id: r.place.environmentId,
    destination_id: r.place.destinationId,
    name: r.name,
    description: r.description ?? null,
    status: 'exited',
    config: JSON.stringify(config),
    tags: JSON.stringify(r.tags ?? []),
    ...stamps(),
  };
}
