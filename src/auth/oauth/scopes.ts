import { PERMISSIONS, isPermission, type Permission } from '../permissions.js';

/** One OAuth scope per berth permission, spelled the same (read, read:sensitive, write, deploy, root). */
export const SCOPES: readonly Permission[] = PERMISSIONS;

/** The permissions a space-separated scope string names (unknown scopes are dropped). */
export function permissionsOfScope(scope: string | undefined | null): Permission[] {
  const seen = new Set<Permission>();
  for (const s of (scope ?? '').split(' ')) if (isPermission(s)) seen.add(s);
  return SCOPES.filter((p) => seen.has(p));
}
