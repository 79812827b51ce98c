import type { Db } from './db.js';

/** Instance-wide settings, declared once with their stored defaults. */
export interface InstanceSettings {
  apiEnabled: boolean;
  /** Normalized allow-list; '' allows every address. */
  allowedIps: string;
  /** The team `berth init` created; only its root tokens flip instance-wide settings. */
  rootTeamId: number | null;
}

const KEYS = { apiEnabled: 'api_enabled', allowedIps: 'allowed_ips', rootTeamId: 'root_team_id' } as const;

export async function readSettings(db: Db): Promise<InstanceSettings> {
  const rows = await db.selectFrom('settings').select(['key', 'value']).execute();
  const map = new Map(rows.map((r) => [r.key, r.value]));
  const root = map.get(KEYS.rootTeamId);
  return {
    apiEnabled: map.get(KEYS.apiEnabled) !== 'false',
    allowedIps: map.get(KEYS.allowedIps) ?? '',
    rootTeamId: root === undefined ? null : Number(root),
  };
}

export async function writeSettings(db: Db, patch: Partial<InstanceSettings>): Promise<void> {
  const entries = Object.entries(patch).filter(([, v]) => v !== undefined) as [keyof InstanceSettings, unknown][];
  const write = async (trx: Db) => {
    for (const [k, v] of entries) {
      await trx
        .insertInto('settings')
        .values({ key: KEYS[k], value: String(v) })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value: String(v) }))
        .execute();
    }
  };
  // Joins the caller's transaction when there is one (init writes settings inside its own).
  await (db.isTransaction ? write(db) : db.transaction().execute(write));
}
