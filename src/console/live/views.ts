import { migrationView } from '../../core/operations/migrate.js';
import { shownStatus } from '../../core/operations/deployments.js';
import { displayStatus } from '../../core/operations/resource-common.js';
import type { Db } from '../../store/db.js';

/** One table row of a live page: the first cell links to `href` when there is one. */
export interface LiveRow {
  id: string;
  href?: string;
  cells: string[];
}

/**
 * What a live page shows, as the store has it now: text by key (`data-live="key"` elements),
 * tables by key (`data-live-rows="key"` bodies) and a log. The page is rendered from it and each
 * server-sent event carries the parts that changed, so both say the same thing. Nothing secret:
 * no resource config, no environment values, no session data.
 */
export interface LiveView {
  title: string;
  text: Record<string, string>;
  tables: Record<string, LiveRow[]>;
  /** The whole stored log (the page shows its tail; the stream sends what was added). */
  log?: string;
  /** Nothing more will change (a deployment or migration that ended): the stream closes. */
  ended: boolean;
}

/** How much of a deployment's log a page shows and streams (the API's preview size). */
export const LOG_CHARS = 10_000;

const at = (iso: string | null | undefined): string => (iso ? iso.slice(0, 19).replace('T', ' ') : '—');
const mib = (n: number | undefined): string => (n === undefined ? '—' : `${(n / 1048576).toFixed(1)} MiB`);

/** The teams a person belongs to: every live read is limited to them. */
export async function teamIdsOf(db: Db, userId: number): Promise<number[]> {
  return (await db.selectFrom('team_members').select('team_id').where('user_id', '=', userId).execute()).map((r) => r.team_id);
}

const KIND_WORD: Record<string, string> = { application: 'application', service: 'service' };
const kindWord = (k: string): string => KIND_WORD[k] ?? `database (${k})`;

/** Every application, database and service of the person's teams with its status as the engine reports it. */
export async function resourcesView(db: Db, teamIds: number[]): Promise<LiveView> {
  const rows = teamIds.length
    ? await db
        .selectFrom('resources as r')
        .innerJoin('teams as t', 't.id', 'r.team_id')
        .innerJoin('environments as e', 'e.id', 'r.environment_id')
        .innerJoin('projects as p', 'p.id', 'e.project_id')
        .innerJoin('destinations as d', 'd.id', 'r.destination_id')
        .innerJoin('servers as s', 's.id', 'd.server_id')
        .select(['r.uuid', 'r.name', 'r.kind', 'r.status', 'r.observed_status', 'r.observed_at', 'r.deleting', 't.name as team', 'p.name as project', 'e.name as env', 's.name as server'])
        .where('r.team_id', 'in', teamIds)
        .orderBy('t.name')
        .orderBy('r.name')
        .orderBy('r.id')
        .execute()
    : [];
  return {
    title: 'Resources',
    text: { count: String(rows.length) },
    tables: {
      resources: rows.map((r) => ({
        id: r.uuid,
        href: `/resources/${r.uuid}`,
        cells: [r.name, kindWord(r.kind), r.team, `${r.project} / ${r.env}`, r.server, displayStatus(r), at(r.observed_at)],
      })),
    },
    ended: false,
  };
}

/** One resource of the person's teams: status, containers, recent deployments and migrations; null: not theirs (or none). */
export async function resourceView(db: Db, teamIds: number[], uuid: string): Promise<LiveView | null> {
  if (!teamIds.length) return null;
  const r = await db
    .selectFrom('resources')
    .select(['id', 'uuid', 'name', 'kind', 'status', 'observed_status', 'observed', 'observed_at', 'restart_count', 'last_exit_code', 'deleting'])
    .where('uuid', '=', uuid)
    .where('team_id', 'in', teamIds)
    .executeTakeFirst();
  if (!r) return null;
  const [deployments, migrations] = await Promise.all([
    db.selectFrom('deployments').select(['uuid', 'kind', 'status', 'created_at', 'finished_at']).where('resource_id', '=', r.id).orderBy('id', 'desc').limit(10).execute(),
    db.selectFrom('migrations_jobs').select(['uuid', 'status', 'progress', 'created_at', 'finished_at']).where('resource_id', '=', r.id).orderBy('id', 'desc').limit(5).execute(),
  ]);
  const containers = Object.entries((r.observed ? JSON.parse(r.observed) : {}) as Record<string, { state: string; health: string | null; restarts: number; exit_code: number | null }>);
  return {
    title: r.name,
    text: {
      status: displayStatus(r),
      kind: kindWord(r.kind),
      observed_at: at(r.observed_at),
      restart_count: r.restart_count === null ? '—' : String(r.restart_count),
      last_exit_code: r.last_exit_code === null ? '—' : String(r.last_exit_code),
    },
    tables: {
      containers: containers.map(([name, c]) => ({ id: name, cells: [name, c.state, c.health ?? 'no health check', String(c.restarts), c.exit_code === null ? '—' : String(c.exit_code)] })),
      deployments: deployments.map((d) => ({ id: d.uuid, href: `/deployments/${d.uuid}`, cells: [d.uuid, d.kind, shownStatus(d.status), at(d.created_at), at(d.finished_at)] })),
      migrations: migrations.map((m) => ({
        id: m.uuid,
        href: `/migrations/${m.uuid}`,
        cells: [m.uuid, m.status, (JSON.parse(m.progress) as { phase?: string }).phase ?? '—', at(m.created_at), at(m.finished_at)],
      })),
    },
    ended: false,
  };
}

/** One deployment of the person's teams with the tail of its log; null: not theirs (or none). */
export async function deploymentView(db: Db, teamIds: number[], uuid: string): Promise<LiveView | null> {
  if (!teamIds.length) return null;
  const d = await db
    .selectFrom('deployments as d')
    .innerJoin('resources as r', 'r.id', 'd.resource_id')
    .leftJoin('servers as s', 's.id', 'd.server_id')
    .select(['d.uuid', 'd.kind', 'd.status', 'd.logs', 'd.created_at', 'd.started_at', 'd.finished_at', 'r.uuid as resource_uuid', 'r.name as resource', 's.name as server'])
    .where('d.uuid', '=', uuid)
    .where('d.team_id', 'in', teamIds)
    .executeTakeFirst();
  if (!d) return null;
  return {
    title: `Deployment of ${d.resource}`,
    text: { status: shownStatus(d.status), kind: d.kind, server: d.server ?? '—', created_at: at(d.created_at), started_at: at(d.started_at), finished_at: at(d.finished_at) },
    tables: { resource: [{ id: d.resource_uuid, href: `/resources/${d.resource_uuid}`, cells: [d.resource] }] },
    log: d.logs,
    ended: d.status !== 'queued' && d.status !== 'in_progress',
  };
}

/** One migration of the person's teams: phase, rounds, bytes copied, downtime; null: not theirs (or none). */
export async function migrationLiveView(db: Db, teamIds: number[], uuid: string): Promise<LiveView | null> {
  if (!teamIds.length) return null;
  const m = await db.selectFrom('migrations_jobs').selectAll().where('uuid', '=', uuid).where('team_id', 'in', teamIds).executeTakeFirst();
  if (!m) return null;
  const [v, r] = await Promise.all([migrationView(db, m), db.selectFrom('resources').select(['uuid', 'name']).where('id', '=', m.resource_id).executeTakeFirstOrThrow()]);
  const p = v.progress;
  return {
    title: `Migration of ${r.name}`,
    text: {
      status: v.status,
      phase: p.phase ?? '—',
      round: p.round === undefined ? '—' : String(p.round),
      volumes: p.volumes_total === undefined ? '—' : `${p.volumes_done ?? 0} of ${p.volumes_total}`,
      bytes: mib(p.bytes),
      bytes_total: mib(p.bytes_total),
      downtime: v.downtime_ms === null ? '—' : `${(v.downtime_ms / 1000).toFixed(1)} s`,
      moves_data: v.moves_data ? 'yes' : 'no (records only)',
      error: v.error ?? '',
      created_at: at(v.created_at),
      finished_at: at(v.finished_at),
    },
    tables: { resource: [{ id: r.uuid, href: `/resources/${r.uuid}`, cells: [r.name] }] },
    ended: ['finished', 'failed', 'cancelled'].includes(v.status),
  };
}
