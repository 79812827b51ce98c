import type { Db } from '../../store/db.js';
import type { AuditDoor } from '../../store/schema-audit.js';
import { paged, type Page } from '../pagination.js';

/** What a reader may narrow the log to; every filter is optional, and all given ones apply. */
export interface AuditFilter {
  /** ISO-8601 UTC bounds, inclusive. */
  from?: string;
  to?: string;
  /** A user id, or an e-mail address. */
  user?: string;
  token?: number;
  operation?: string;
  /** A uuid among the entry's targets (or the deployment or migration it started). */
  resource?: string;
  /** 'ok', 'error' (anything else), or one result exactly ('forbidden', 'not_found', …). */
  result?: string;
}

export interface AuditEntryView {
  uuid: string;
  at: string;
  user_id: number | null;
  user_email: string | null;
  token_id: number | null;
  oauth_client_id: string | null;
  source_ip: string | null;
  door: AuditDoor;
  operation: string;
  targets: string[];
  arguments: Record<string, unknown> | null;
  result: string;
  status: number;
  duration_ms: number;
  started_uuid: string | null;
}

/** One page of a team's entries, newest first. Only this team's: the team is not a filter, it is the scope. */
export function listAudit(db: Db, teamId: number, f: AuditFilter, p: Page) {
  let q = db.selectFrom('audit_log as a').leftJoin('users as u', 'u.id', 'a.user_id').where('a.team_id', '=', teamId);
  if (f.from) q = q.where('a.at', '>=', f.from);
  if (f.to) q = q.where('a.at', '<=', f.to);
  if (f.user) q = /^\d+$/.test(f.user) ? q.where('a.user_id', '=', Number(f.user)) : q.where('u.email', '=', f.user.toLowerCase());
  if (f.token !== undefined) q = q.where('a.token_id', '=', f.token);
  if (f.operation) q = q.where('a.operation', '=', f.operation);
  // Targets are a JSON array of uuids (letters and digits only, checked at the door): a quoted match is exact.
  if (f.resource) {
    const r = f.resource;
    q = q.where((eb) => eb.or([eb('a.targets', 'like', `%"${r}"%`), eb('a.started_uuid', '=', r)]));
  }
  if (f.result === 'error') q = q.where('a.result', '!=', 'ok');
  else if (f.result) q = q.where('a.result', '=', f.result);
  return paged(
    q,
    p,
    (b) =>
      b
        .select([
          'a.uuid',
          'a.at',
          'a.user_id',
          'u.email as user_email',
          'a.token_id',
          'a.oauth_client_id',
          'a.source_ip',
          'a.door',
          'a.operation',
          'a.targets',
          'a.arguments',
          'a.result',
          'a.status',
          'a.duration_ms',
          'a.started_uuid',
        ])
        .orderBy('a.id', 'desc'),
    (rows): AuditEntryView[] =>
      rows.map((r) => ({
        ...r,
        user_email: r.user_email ?? null,
        targets: JSON.parse(r.targets) as string[],
        arguments: r.arguments === null ? null : (JSON.parse(r.arguments) as Record<string, unknown>),
      })),
  );
}

/** Removes entries older than the cutoff (ISO-8601): the retention worker's one write to the log. */
export async function pruneAudit(db: Db, before: string): Promise<number> {
  const r = await db.deleteFrom('audit_log').where('at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
