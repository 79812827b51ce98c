import type { Db } from '../store/db.js';
import type { SharedScope } from '../store/schema-shared-variables.js';

const SCOPES: readonly SharedScope[] = ['team', 'project', 'environment', 'server'];
const REFERENCE = /\{\{(.*?)\}\}/g;

export interface Resolved {
  env: Record<string, string>;
  /** One line per reference left as written (no such shared variable), for the deployment log. */
  notes: string[];
}

/**
 * Resolves Coolify's shared-variable references in a resource's own variables: `{{team.KEY}}`,
 * `{{project.KEY}}`, `{{environment.KEY}}` and `{{server.KEY}}` (spaces inside the braces allowed)
 * become the value of the shared variable of that name in the resource's own team, project,
 * environment, or the server it is deployed to — never another team's. One pass: a shared value
 * that itself contains `{{…}}` is not resolved again. Braces naming anything else are left alone
 * (they may mean something to the program). A reference to a shared variable that does not exist
 * is left as written, as Coolify does, and named in `notes`.
 */
export async function resolveSharedReferences(db: Db, r: { team_id: number; environment_id: number }, serverId: number, env: Record<string, string>): Promise<Resolved> {
  const refs = (v: string) => [...v.matchAll(REFERENCE)].map((m) => ({ raw: m[0], inner: m[1]!.trim() }));
  const referring = Object.entries(env).filter(([, v]) => refs(v).some((x) => SCOPES.some((s) => x.inner.startsWith(`${s}.`))));
  if (referring.length === 0) return { env, notes: [] };
  const environment = await db.selectFrom('environments').select(['id', 'project_id']).where('id', '=', r.environment_id).executeTakeFirstOrThrow();
  const scopeIds: Record<SharedScope, number> = { team: r.team_id, project: environment.project_id, environment: environment.id, server: serverId };
  const rows = await db
    .selectFrom('shared_environment_variables')
    .select(['type', 'key', 'value'])
    .where('team_id', '=', r.team_id)
    .where((eb) => eb.or(SCOPES.map((s) => eb.and([eb('type', '=', s), eb('scope_id', '=', scopeIds[s])]))))
    .execute();
  const shared = new Map(rows.map((x) => [`${x.type}.${x.key}`, x.value ?? '']));
  const out = { ...env };
  const notes: string[] = [];
  for (const [key, value] of referring) {
    out[key] = value.replace(REFERENCE, (raw, inner: string) => {
      const name = inner.trim();
      if (!SCOPES.some((s) => name.startsWith(`${s}.`))) return raw;
      const found = shared.get(name);
      if (found !== undefined) return found;
      notes.push(`${key}: ${raw} is not a shared variable of this ${name.slice(0, name.indexOf('.'))}; left as written`);
      return raw;
    });
  }
  return { env: out, notes };
}
