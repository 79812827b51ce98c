import { isPermission, type Permission } from '../auth/permissions.js';
import { bearerFrom, parseToken, secretMatches } from '../auth/token.js';
import { perStore } from '../store/cached.js';
import type { Db } from '../store/db.js';
import { param, prepared } from '../store/prepared.js';
import { decodeSettings, SETTING_KEYS, type InstanceSettings } from '../store/settings.js';
import type { Caller, RequestAccess } from './caller.js';
import { BerthError } from './errors.js';

/** last_used_at is written at most this often per token, so reads do not turn into writes. */
const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * The token with its holder's membership of the token's team (absent when they left it), and the
 * instance settings every request needs, in one statement: each statement is a read transaction
 * of its own, and those dominated the cost of an authenticated request.
 */
const tokenById = perStore((db) =>
  prepared(db, (q) =>
    q
      .selectFrom('api_tokens as t')
      .leftJoin('team_members as m', (j) => j.onRef('m.team_id', '=', 't.team_id').onRef('m.user_id', '=', 't.user_id'))
      .select(['t.id', 't.user_id', 't.team_id', 't.token_hash', 't.permissions', 't.expires_at', 't.last_used_at', 'm.role'])
      .select((eb) =>
        Object.values(SETTING_KEYS).map((key) => eb.selectFrom('settings').select('value').where('key', '=', key).as(`setting_${key}`)),
      )
      .where('t.id', '=', param('id')),
  ),
);

export interface Authenticated {
  caller: Omit<Caller, 'rootTeam'>;
  settings: InstanceSettings;
}

/**
 * Token → Caller. Every failure after the header is present is the same 401 "Invalid token.",
 * so ids cannot be probed. There is no cache: a deleted token or a departed member fails on the
 * very next request.
 */
export async function authenticate(db: Db, access: RequestAccess): Promise<Authenticated> {
  const value = bearerFrom(access.authorization);
  if (value === undefined) throw new BerthError('unauthenticated');
  const parsed = parseToken(value);
  if (!parsed) throw new BerthError('invalid_token');

  const [row] = await tokenById(db)({ id: parsed.id });

  // Same hash and comparison whether or not the id exists.
  if (!secretMatches(parsed.secret, row?.token_hash) || !row) throw new BerthError('invalid_token');
  const now = Date.now();
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) throw new BerthError('invalid_token');
  if (row.role === null) throw new BerthError('invalid_token');

  if (row.last_used_at === null || now - Date.parse(row.last_used_at) >= LAST_USED_GRANULARITY_MS) {
    await db.updateTable('api_tokens').set({ last_used_at: new Date(now).toISOString() }).where('id', '=', row.id).execute();
  }

  const permissions = new Set((JSON.parse(row.permissions) as string[]).filter(isPermission)) as Set<Permission>;
  const r = row as unknown as Record<string, string | null>;
  return {
    caller: { userId: row.user_id, teamId: row.team_id, tokenId: row.id, permissions, sourceIp: access.sourceIp },
    settings: decodeSettings((key) => r[`setting_${key}`]),
  };
}
