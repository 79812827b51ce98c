import type { Db } from '../store/db.js';
import { BerthError } from '../errors.js';
import type { ServiceConfig } from './model/service.js';

/** One of Coolify's comma-separated URLs: a port after the host is the container's port. */
export interface DomainUrl {
  scheme: 'http' | 'https';
  /** Lower case, no port. */
  host: string;
  /** The container port the proxy forwards to, when the URL names one. */
  port: number | null;
  /** A path prefix ("/api"), or "" for the whole host. */
  path: string;
}

/** The URLs of a `domains` (`fqdn`) value; ones that do not parse are left out (the door refused them). */
export function parseDomains(fqdn: string | null | undefined): DomainUrl[] {
  const out: DomainUrl[] = [];
  for (const raw of (fqdn ?? '').split(',')) {
    if (!raw.trim()) continue;
    try {
      const u = new URL(raw.trim());
      out.push({ scheme: u.protocol === 'https:' ? 'https' : 'http', host: u.hostname.toLowerCase(), port: u.port ? Number(u.port) : null, path: u.pathname.replace(/\/+$/, '') });
    } catch {
      // refused at the door; an old record's stray value routes nothing
    }
  }
  return out;
}

/** What two resources must not both answer to: the host and path prefix (the port is the container's). */
export const claimOf = (d: DomainUrl) => `${d.host}${d.path}`;

/** Who answers to a URL, as a 409 names it. */
interface Claimant {
  resourceId: number;
  teamId: number;
  part: string | null;
  who: string;
  fqdn: string | null | undefined;
}

async function claimants(db: Db): Promise<Claimant[]> {
  const rows = await db.selectFrom('resources').select(['id', 'team_id', 'name', 'kind', 'config']).where('kind', 'in', ['application', 'service']).execute();
  return rows.flatMap((row): Claimant[] => {
    const c = JSON.parse(row.config) as { fqdn?: string | null; parts?: ServiceConfig['parts']; compose_domains?: Record<string, string> };
    if (row.kind === 'application')
      return [
        { resourceId: row.id, teamId: row.team_id, part: null, who: `application '${row.name}'`, fqdn: c.fqdn },
        // A dockercompose application's domains, per compose service.
        ...Object.entries(c.compose_domains ?? {}).map(([name, fqdn]) => ({ resourceId: row.id, teamId: row.team_id, part: name, who: `application '${row.name}' (${name})`, fqdn })),
      ];
    return Object.entries(c.parts ?? {}).map(([name, p]) => ({ resourceId: row.id, teamId: row.team_id, part: name, who: `service '${row.name}' (${name})`, fqdn: p.fqdn }));
  });
}

/**
 * Refuses (409) domains another resource already answers to: named when it is the team's own
 * (force_domain_override lets the team share one), unnamed when it is another team's, whose
 * resources stay invisible, and never overridable (a tenant cannot take another's domain).
 */
export async function requireFreeDomains(db: Db, teamId: number, fqdn: string | null, self: { resourceId?: number; part?: string | null }, force = false): Promise<void> {
  const wanted = new Set(parseDomains(fqdn).map(claimOf));
  if (!wanted.size) return;
  const ours: string[] = [];
  const theirs: string[] = [];
  for (const c of await claimants(db)) {
    if (c.resourceId === self.resourceId && c.part === (self.part ?? null)) continue;
    for (const d of parseDomains(c.fqdn)) {
      if (!wanted.has(claimOf(d))) continue;
      if (c.teamId === teamId) ours.push(`${claimOf(d)} is used by ${c.who}`);
      else theirs.push(`${claimOf(d)} is used by another resource`);
    }
  }
  if (theirs.length) throw new BerthError('conflict', { message: `Domain conflicts detected: ${[...new Set(theirs)].join('; ')}.` });
  if (ours.length && !force) throw new BerthError('conflict', { message: `Domain conflicts detected: ${ours.join('; ')}. Use force_domain_override=true to proceed.` });
}
