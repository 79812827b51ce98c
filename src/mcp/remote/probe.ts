import { isPermission, type Permission } from '../../auth/permissions.js';
import type { Operation } from '../../core/operation.js';
import { RetryLaterError, type PacedClient, type PacedResponse } from './paced-client.js';
import { redactText } from './redact-upstream.js';
import { describeNetworkError, type Upstream } from './upstream.js';

/** What the start-up probe learned about the upstream and the token. */
export interface UpstreamFacts {
  version?: string;
  team?: { id: unknown; name?: unknown };
  /** berth publishes its operation table (GET /api/v1/openapi.json); anything else is 'other' (Coolify). */
  kind: 'berth' | 'other';
  /** `METHOD /path` of every operation the upstream offers; undefined when it does not say. */
  offered?: ReadonlySet<string>;
  /**
   * What the token may do, where the upstream tells (berth). A permission that could not be
   * learned is assumed held, so its tools stay listed and a refusal is reported when called.
   */
  permissions?: ReadonlySet<Permission>;
  /** The token belongs to the upstream instance's root team (berth's instance-wide tools). */
  rootTeam?: boolean;
  /** Things worth telling the user on stderr. */
  warnings: string[];
}

export const operationKey = (op: Pick<Operation, 'http'>) => `${op.http.method} ${op.http.path}`;

/** A start-up failure: one clear line on stderr, a non-zero exit, nothing on stdout. */
export class StartError extends Error {
  override name = 'StartError';
}

interface Answer {
  res?: PacedResponse;
  json?: Record<string, unknown>;
  error?: unknown;
}

function parseJson(body: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(body);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const contentType = (res: PacedResponse) => String(res.headers['content-type'] ?? '');
const messageOf = (a: Answer) => (typeof a.json?.message === 'string' ? a.json.message : undefined);
const isMissingPermission = (a: Answer) => a.res?.status === 403 && (Array.isArray(a.json?.missing_permissions) || /^Missing required permissions/.test(messageOf(a) ?? ''));
/** berth's read of the token's own permissions (get_current_token). */
const TOKEN_PATH = '/api/v1/tokens/current';

/**
 * Probes the upstream at start: `GET /api/v1/version` (is this a berth or Coolify API at all?),
 * `GET /api/v1/teams/current` (is the token accepted?), and berth's OpenAPI document (which
 * operations exist). On berth, the token's permissions are then read from `GET /api/v1/tokens/current`:
 * every probe is a read, so a start leaves nothing on the upstream, not even an audit entry.
 */
export async function probeUpstream(clients: { fast: PacedClient; patient: PacedClient }, upstream: Upstream, secrets: readonly string[]): Promise<UpstreamFacts> {
  // Every probe is a read (GET): nothing changes upstream, and nothing is audited there.
  const once = async (client: PacedClient, path: string): Promise<Answer> => {
    try {
      const res = await client.request('GET', `${upstream.basePath}${path}`);
      return { res, json: parseJson(res.body) };
    } catch (error) {
      if (error instanceof RetryLaterError && error.response) return { res: error.response, json: parseJson(error.response.body), error };
      return { error };
    }
  };
  // Without retries first, so a wrong URL fails at once; a rate-limited answer is asked again
  // through the patient client, which waits as the upstream says (up to the wait bound).
  const ask = async (path: string): Promise<Answer> => {
    const first = await once(clients.fast, path);
    const busy = first.res?.status === 429 || first.res?.status === 503;
    return busy ? once(clients.patient, path) : first;
  };
  const where = upstream.display;
  const [version, team, openapi] = await Promise.all([ask('/api/v1/version'), ask('/api/v1/teams/current'), ask('/api/v1/openapi.json')]);

  // Is anything there at all?
  if (!version.res) {
    throw new StartError(`cannot reach the upstream API at ${where}: ${redactText(describeNetworkError(version.error).text, secrets)}`);
  }
  const refused = [version, team].find((a) => a.res?.status === 401);
  if (refused) throw new StartError(`BERTH_TOKEN was refused by ${where}: ${messageOf(refused) ?? `HTTP ${refused.res!.status}`}`);
  const warnings: string[] = [];
  let versionText: string | undefined;
  const v = version.res;
  if (v.status === 200) {
    const text = v.body.trim();
    if (/json|html/i.test(contentType(v)) || !/^v?\d+(\.\d+)+\S*$/.test(text) || text.length > 64) {
      throw new StartError(`${where} does not look like a berth or Coolify API: GET /api/v1/version answered ${contentType(v) || 'something'} that is not a version number (is the URL right?)`);
    }
    versionText = text;
  } else if (v.status === 429 || v.status === 503) {
    throw new StartError(`${where} is busy (HTTP ${v.status}${messageOf(version) ? `: ${messageOf(version)}` : ''}): retry after ${(version.error as RetryLaterError).seconds} s`);
  } else if (v.status !== 403 || !messageOf(version)) {
    throw new StartError(`${where} does not look like a berth or Coolify API: GET /api/v1/version answered HTTP ${v.status} (is the URL right?)`);
  }
  let teamInfo: UpstreamFacts['team'];
  if (team.res?.status === 200 && team.json) teamInfo = { id: team.json.id, name: team.json.name };
  else if (team.res && team.res.status === 403 && !isMissingPermission(team)) warnings.push(`the upstream refuses this token: ${messageOf(team) ?? 'HTTP 403'} (tools will report it when called)`);
  else if (team.res && team.res.status !== 403) warnings.push(`GET /api/v1/teams/current answered HTTP ${team.res.status}`);

  // Which operations exist (berth's OpenAPI document; Coolify has none at this path).
  let kind: UpstreamFacts['kind'] = 'other';
  let offered: Set<string> | undefined;
  const paths = openapi.res?.status === 200 ? (openapi.json?.paths as Record<string, Record<string, Record<string, unknown>>> | undefined) : undefined;
  if (paths && typeof paths === 'object') {
    offered = new Set();
    for (const [p, methods] of Object.entries(paths)) {
      for (const [m, spec] of Object.entries(methods ?? {})) {
        offered.add(`${m.toUpperCase()} ${p}`);
        if (spec && typeof spec === 'object' && 'x-berth-permission' in spec) kind = 'berth';
      }
    }
  }

  const facts: UpstreamFacts = { version: versionText, team: teamInfo, kind, offered, warnings };
  // Permissions can be learned only from berth, and only while the token is let in at all.
  const admitted = team.res?.status === 200 || isMissingPermission(team);
  if (kind !== 'berth' || !admitted) return facts;

  // One read of what the token holds: it changes nothing and leaves no audit entry on the
  // upstream (writes with a bogus body, used before, left two failed entries at every start).
  if (!offered?.has(`GET ${TOKEN_PATH}`)) return facts;
  const own = await ask(TOKEN_PATH);
  const listed = own.res?.status === 200 && Array.isArray(own.json?.permissions) ? (own.json.permissions as unknown[]) : undefined;
  if (!listed) {
    warnings.push(`GET ${TOKEN_PATH} answered ${own.res ? `HTTP ${own.res.status}` : 'nothing'}: every tool is listed, and a refusal is reported when called`);
    return facts;
  }
  facts.permissions = new Set(listed.filter((p): p is Permission => typeof p === 'string' && isPermission(p)));
  facts.rootTeam = own.json?.root_team === true;
  return facts;
}
