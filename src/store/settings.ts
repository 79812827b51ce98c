import { perStore } from './cached.js';
import type { Db } from './db.js';
import { prepared } from './prepared.js';

const allSettings = perStore((db) => prepared(db, (q) => q.selectFrom('settings').select(['key', 'value'])));

/** Instance-wide settings, declared once with their stored defaults. */
export interface InstanceSettings {
  apiEnabled: boolean;
  /** The MCP door (streamable HTTP and stdio); Coolify's is_mcp_server_enabled. */
  mcpEnabled: boolean;
  /** Normalized allow-list; '' allows every address. */
  allowedIps: string;
  /** The team `berth init` created; only its root tokens flip instance-wide settings. */
  rootTeamId: number | null;
}

export const SETTING_KEYS = { apiEnabled: 'api_enabled', mcpEnabled: 'mcp_enabled', allowedIps: 'allowed_ips', rootTeamId: 'root_team_id' } as const;
const KEYS = SETTING_KEYS;

/** Stored text values (absent ones undefined or null) → settings with their defaults. */
export function decodeSettings(get: (key: string) => string | null | undefined): InstanceSettings {
  const root = get(KEYS.rootTeamId);
  return {
    apiEnabled: get(KEYS.apiEnabled) !== 'false',
    mcpEnabled: get(KEYS.mcpEnabled) !== 'false',
    allowedIps: get(KEYS.allowedIps) ?? '',
    rootTeamId: root === undefined || root === null ? null : Number(root),
  };
}

export async function readSettings(db: Db): Promise<InstanceSettings> {
  const rows = await allSettings(db)({});
  const map = new Map(rows.map((r) => [r.key, r.value]));
  return decodeSettings((k) => map.get(k));
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

/**
 * How long audit entries are kept (days): read by the retention worker and the settings
 * operations only, so it stays out of SETTING_KEYS, which every authentication reads.
 */
export const AUDIT_RETENTION_KEY = 'audit_retention_days';
export const AUDIT_RETENTION_DEFAULT_DAYS = 90;

export async function readAuditRetentionDays(db: Db): Promise<number> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', AUDIT_RETENTION_KEY).executeTakeFirst();
  const days = Number(row?.value);
  return Number.isInteger(days) && days > 0 ? days : AUDIT_RETENTION_DEFAULT_DAYS;
}

export async function writeAuditRetentionDays(db: Db, days: number): Promise<void> {
  await db
    .insertInto('settings')
    .values({ key: AUDIT_RETENTION_KEY, value: String(days) })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: String(days) }))
    .execute();
}
