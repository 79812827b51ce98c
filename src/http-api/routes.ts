export interface RouteEntry {
  method: string;
  path: string;
  pattern: RegExp;
}

/** Route templates as regular expressions, to tell "wrong method" (405) from "no route" (404). */
export function compileRoutes(routes: { method: string; path: string }[]): RouteEntry[] {
  return routes.map((r) => ({
    ...r,
    pattern: new RegExp(`^${r.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[a-z_]+\}/g, '[^/]+')}$`),
  }));
}
