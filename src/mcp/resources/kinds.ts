import { UUID_PATTERN } from '../../core/validators.js';

/**
 * The kinds of `berth://` resource, declared once: resource templates, resources/list, reads
 * and docs/mcp.md are all derived from this table. Each is read through the operation named by
 * `read`, so team scoping and redaction are exactly the REST door's.
 */
export interface ResourceKindSpec {
  /** The URI's first segment: berth://<kind>/<uuid>. */
  kind: 'applications' | 'databases' | 'services' | 'deployments' | 'migrations' | 'servers';
  /** The operation that reads one (its input is { uuid }). */
  read: string;
  title: string;
  description: string;
  /** What resources/list holds of this kind (the store rows, team-scoped; see list.ts). */
  listed: string;
  /** A status document (engine status, restarts, last exit, server, last deployment) instead of the whole read. */
  status?: true;
}

export const RESOURCE_KINDS: readonly ResourceKindSpec[] = [
  {
    kind: 'applications',
    read: 'get_application',
    title: 'Application status',
    description: "An application's status: engine status, restart count, last exit code, when berth last looked, its server and its last deployment.",
    listed: 'every application of the team',
    status: true,
  },
  {
    kind: 'databases',
    read: 'get_database',
    title: 'Database status',
    description: "A database's status: engine status, restart count, last exit code, when berth last looked, its server and its last deployment.",
    listed: 'every database of the team',
    status: true,
  },
  {
    kind: 'services',
    read: 'get_service',
    title: 'Service status',
    description: "A service's status: engine status, restart count, last exit code, when berth last looked, its server and its last deployment.",
    listed: 'every service of the team',
    status: true,
  },
  {
    kind: 'deployments',
    read: 'get_deployment',
    title: 'Deployment',
    description: "A deployment's status and the tail of its log (the log only with read:sensitive, as get_deployment).",
    listed: 'deployments queued or in progress',
  },
  {
    kind: 'migrations',
    read: 'get_migration',
    title: 'Migration',
    description: "A migration's status, phase, bytes copied and, once done, the downtime.",
    listed: 'migrations not yet ended',
  },
  {
    kind: 'servers',
    read: 'get_server',
    title: 'Server',
    description: 'A server: whether berth reaches it, its validation, its settings (secrets only with read:sensitive).',
    listed: 'every server of the team',
  },
];

export const SCHEME = 'berth:';
export const uriOf = (kind: ResourceKindSpec['kind'], uuid: string): string => `berth://${kind}/${uuid}`;
export const templateOf = (k: ResourceKindSpec): string => `berth://${k.kind}/{uuid}`;

const BY_KIND = new Map(RESOURCE_KINDS.map((k) => [k.kind as string, k]));

/**
 * What a URI names: a kind and a uuid; 'invalid' when it is not a URI or a berth:// URI of the
 * wrong shape (invalid params); 'unknown' for a well-formed URI berth has no resource at (not found).
 */
export function parseUri(uri: string): { spec: ResourceKindSpec; uuid: string } | 'invalid' | 'unknown' {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return 'invalid';
  }
  if (u.protocol !== SCHEME) return 'unknown';
  const parts = u.pathname.split('/');
  // berth://applications/abc: host "applications", path "/abc".
  if (u.search || u.hash || u.username || u.port || parts.length !== 2 || parts[0] !== '' || !UUID_PATTERN.test(parts[1]!)) return 'invalid';
  const spec = BY_KIND.get(u.hostname);
  return spec ? { spec, uuid: parts[1]! } : 'unknown';
}

/** The uuid a subscribed URI waits on (the change feed names uuids), or undefined when it names none. */
export function uuidOfUri(uri: string): string | undefined {
  const p = parseUri(uri);
  return typeof p === 'object' ? p.uuid : undefined;
}
