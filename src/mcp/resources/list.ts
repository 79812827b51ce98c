import { ProtocolError, ProtocolErrorCode, type ListResourcesResult, type Resource } from '@modelcontextprotocol/server';
import type { Caller } from '../../core/caller.js';
import type { Db } from '../../store/db.js';
import { RESOURCE_KINDS, uriOf, type ResourceKindSpec } from './kinds.js';

/** resources/list page size: a client pages on with nextCursor. */
export const PAGE_SIZE = 100;

/** One kind's rows after an id, team-scoped: what resources/list holds of it (kinds.ts `listed`). */
type Row = { id: number; uuid: string; name: string };
const DATABASE_KINDS = ['postgresql', 'mysql', 'mariadb', 'redis', 'mongodb', 'clickhouse', 'dragonfly', 'keydb'] as const;

function rowsOf(db: Db, kind: ResourceKindSpec['kind'], teamId: number, after: number, limit: number): Promise<Row[]> {
  switch (kind) {
    case 'applications':
    case 'databases':
    case 'services': {
      const q = db.selectFrom('resources').select(['id', 'uuid', 'name']).where('team_id', '=', teamId).where('id', '>', after).where('deleting', 'is', null);
      const k = kind === 'applications' ? q.where('kind', '=', 'application') : kind === 'services' ? q.where('kind', '=', 'service') : q.where('kind', 'in', DATABASE_KINDS);
      return k.orderBy('id').limit(limit).execute();
    }
    case 'servers':
      return db.selectFrom('servers').select(['id', 'uuid', 'name']).where('team_id', '=', teamId).where('id', '>', after).orderBy('id').limit(limit).execute();
    case 'deployments':
      return db
        .selectFrom('deployments as d')
        .innerJoin('resources as r', 'r.id', 'd.resource_id')
        .select(['d.id', 'd.uuid', 'r.name'])
        .where('d.team_id', '=', teamId)
        .where('d.id', '>', after)
        .where('d.status', 'in', ['queued', 'in_progress'])
        .orderBy('d.id')
        .limit(limit)
        .execute();
    case 'migrations':
      return db
        .selectFrom('migrations_jobs as m')
        .innerJoin('resources as r', 'r.id', 'm.resource_id')
        .select(['m.id', 'm.uuid', 'r.name'])
        .where('m.team_id', '=', teamId)
        .where('m.id', '>', after)
        .where('m.status', 'not in', ['finished', 'failed', 'cancelled'])
        .orderBy('m.id')
        .limit(limit)
        .execute();
  }
}

/** An opaque cursor: the kind reached and the last id of it sent (keyset: stable while things come and go). */
const encodeCursor = (k: number, id: number): string => Buffer.from(JSON.stringify([k, id])).toString('base64url');
function decodeCursor(cursor: string | undefined): [number, number] {
  if (cursor === undefined) return [0, 0];
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isInteger(v[0]) && Number.isInteger(v[1]) && v[0] >= 0 && v[0] < RESOURCE_KINDS.length && v[1] >= 0) return [v[0], v[1]];
  } catch {
    // answered below
  }
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor: pass the nextCursor of the previous page as it came.', { cursor });
}

const nameOf = (spec: ResourceKindSpec, r: Row) => (spec.status || spec.kind === 'servers' ? r.name : `${spec.kind.slice(0, -1)} of ${r.name}`);

/** One page of the team's resources: every kind in the table's order, each by id. */
export async function listPage(db: Db, caller: Caller, cursor: string | undefined): Promise<ListResourcesResult> {
  let [k, after] = decodeCursor(cursor);
  const resources: Resource[] = [];
  while (k < RESOURCE_KINDS.length) {
    const spec = RESOURCE_KINDS[k]!;
    const want = PAGE_SIZE - resources.length;
    // One more than fits tells whether this kind goes on past the page.
    const rows = await rowsOf(db, spec.kind, caller.teamId, after, want + 1);
    for (const r of rows.slice(0, want)) resources.push({ uri: uriOf(spec.kind, r.uuid), name: nameOf(spec, r), title: `${spec.title}: ${r.name}`, mimeType: 'application/json' });
    if (rows.length > want) return { resources, nextCursor: encodeCursor(k, rows[want - 1]!.id) };
    k += 1;
    after = 0;
    if (resources.length === PAGE_SIZE) return k < RESOURCE_KINDS.length ? { resources, nextCursor: encodeCursor(k, 0) } : { resources };
  }
  return { resources };
}
