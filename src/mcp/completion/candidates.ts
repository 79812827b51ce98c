import { satisfies } from '../../auth/permissions.js';
import type { Caller } from '../../core/caller.js';
import { KINDS_OF } from '../../core/model/kinds.js';
import { sql } from 'kysely';
import type { Db } from '../../store/db.js';

/**
 * What an argument names, and so what it completes to: one of the team's things. Declared once;
 * prompts name a kind per argument, resource templates per variable.
 */
export const COMPLETION_KINDS = ['application', 'database', 'service', 'server', 'project', 'destination', 'deployment', 'migration'] as const;
export type CompletionKind = (typeof COMPLETION_KINDS)[number];

/** MCP's cap on one completion answer (the 2026 schema's `values.max(100)`). */
export const MAX_VALUES = 100;

export interface Completion {
  values: string[];
  total: number;
  hasMore: boolean;
}

export const NO_COMPLETION: Completion = { values: [], total: 0, hasMore: false };

/** A LIKE pattern for "starts with", the prefix's own wildcards taken literally. */
const startsWith = (prefix: string) => `${prefix.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

interface Row {
  uuid: string;
  name: string | null;
}

/** Where each kind's rows are: its table, whether it has names, and (resources) which kinds. */
const SOURCES: Record<CompletionKind, { table: string; named: boolean; kinds?: readonly string[] }> = {
  application: { table: 'resources', named: true, kinds: KINDS_OF.applications },
  database: { table: 'resources', named: true, kinds: KINDS_OF.databases },
  service: { table: 'resources', named: true, kinds: KINDS_OF.services },
  server: { table: 'servers', named: true },
  project: { table: 'projects', named: true },
  destination: { table: 'destinations', named: true },
  deployment: { table: 'deployments', named: false },
  migration: { table: 'migrations_jobs', named: false },
};

/**
 * The rows of one kind in the caller's team whose uuid or name starts with the prefix (names
 * compared without case), by name then uuid (newest first where there are no names). Every
 * query is bound to the caller's team: another team's rows are never candidates.
 */
async function rowsOf(db: Db, kind: CompletionKind, teamId: number, pattern: string, limit: number): Promise<{ rows: Row[]; total: number }> {
  const src = SOURCES[kind];
  const like = (col: string) => sql`lower(${sql.ref(col)}) like ${pattern} escape '\\'`;
  const where = sql`team_id = ${teamId}${src.kinds ? sql` and kind in (${sql.join([...src.kinds])})` : sql``} and (${like('uuid')}${src.named ? sql` or ${like('name')}` : sql``})`;
  const table = sql.table(src.table);
  const counted = await sql<{ n: number | string }>`select count(*) as n from ${table} where ${where}`.execute(db);
  const rows = await sql<Row>`select uuid, ${src.named ? sql`name` : sql`null as name`} from ${table} where ${where} order by ${src.named ? sql`name, uuid` : sql`id desc`} limit ${limit}`.execute(db);
  return { rows: rows.rows, total: Number(counted.rows[0]?.n ?? 0) };
}

/**
 * Completions of one argument: the team's uuids that start with the value and, where the kind
 * has names and `names` allows, its names too (a prompt takes either; a URI template only uuids).
 * At most 100 values; `total` counts every match, `hasMore` says some were left out.
 */
export async function complete(db: Db, caller: Pick<Caller, 'teamId' | 'permissions'>, kind: CompletionKind, value: string, names: boolean): Promise<Completion> {
  if (!satisfies(caller.permissions, 'read') || value.length > 255) return NO_COMPLETION;
  const { rows, total } = await rowsOf(db, kind, caller.teamId, startsWith(value), MAX_VALUES + 1);
  const prefix = value.toLowerCase();
  const out: string[] = [];
  for (const r of rows) {
    if (r.uuid.toLowerCase().startsWith(prefix)) out.push(r.uuid);
    if (names && r.name?.toLowerCase().startsWith(prefix) && !out.includes(r.name)) out.push(r.name);
  }
  const values = out.slice(0, MAX_VALUES);
  return { values, total: Math.max(total, out.length), hasMore: out.length > MAX_VALUES || total > rows.length };
}
