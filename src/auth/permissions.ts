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

/** root may be put on a token only by a team owner or admin (spec: Admin or Owner role). */
export function mayGrantRoot(role: Role): boolean {
  return role === 'owner' || role === 'admin';
}
