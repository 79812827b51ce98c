/** Token permissions exactly as the spec names them. */
export const PERMISSIONS = ['read', 'read:sensitive', 'write', 'deploy', 'root'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/**
 * What an operation may require: one of read, write, deploy; root for the API toggle; and
 * read:sensitive for operations whose whole answer is secret (container logs).
 */
export type RequiredPermission = 'read' | 'read:sensitive' | 'write' | 'deploy' | 'root';

export function isPermission(name: string): name is Permission {
  return (PERMISSIONS as readonly string[]).includes(name);
}

/**
 * Whether a token's permissions satisfy a requirement. root passes every check. read:sensitive
 * satisfies read because the spec defines it as "everything in read, plus secrets"; no other
 * permission implies another (write does not imply read).
 */
export function satisfies(granted: ReadonlySet<Permission>, required: RequiredPermission): boolean {
  if (granted.has('root')) return true;
  if (granted.has(required)) return true;
  return required === 'read' && granted.has('read:sensitive');
}

export function missingFor(granted: ReadonlySet<Permission>, required: RequiredPermission): Permission[] {
  return satisfies(granted, required) ? [] : [required];
}

/** Whether sensitive fields stay in responses for this token. */
export function seesSensitive(granted: ReadonlySet<Permission>): boolean {
  return granted.has('root') || granted.has('read:sensitive');
}

export type Role = 'owner' | 'admin' | 'member';
export const ROLES: readonly Role[] = ['owner', 'admin', 'member'];

/**
 * What a holder of each role may hold, written down once: root only for owners and admins (spec:
 * "Can be assigned only by users with the Admin or Owner role"); every other permission for
 * every member. Checked when a token is created and again on every use (capTo), so a holder's
 * role change takes effect at their tokens' next request.
 */
export const ROLE_MAY_HOLD: Readonly<Record<Role, ReadonlySet<Permission>>> = {
  owner: new Set(PERMISSIONS),
  admin: new Set(PERMISSIONS),
  member: new Set<Permission>(['read', 'read:sensitive', 'write', 'deploy']),
};

/** root may be put on a token only by a team owner or admin (spec: Admin or Owner role). */
export function mayGrantRoot(role: Role): boolean {
  return ROLE_MAY_HOLD[role].has('root');
}

/**
 * A token's effective permissions: those it was given that its holder's current role may hold.
 * Never widens: a root token whose holder became a member keeps only what it also lists
 * (root does not turn into read, write and deploy).
 */
export function capTo(role: Role, permissions: Iterable<Permission>): ReadonlySet<Permission> {
  const allowed = ROLE_MAY_HOLD[role];
  return new Set([...permissions].filter((p) => allowed.has(p)));
}
