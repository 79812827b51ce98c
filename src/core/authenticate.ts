import { capTo, isPermission, type Permission } from '../auth/permissions.js';
import { bearerFrom, parseToken, secretMatches } from '../auth/token.js';
import { findAccessToken } from '../auth/oauth/access-token.js';
import { perStore } from '../store/cached.js';
import type { Db } from '../store/db.js';
import { param, prepared } from '../store/prepared.js';
import { decodeSettings, SETTING_KEYS, type InstanceSettings } from '../store/settings.js';
import type { Caller, RequestAccess } from './caller.js';
import type { AuditDoor } from '../store/schema-audit.js';
import { BerthError } from '../errors.js';

/** last_used_at is written at most this often per token, so reads do not turn into writes. */
const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * The token with its holder's membership (role) in the token's team (absent when they left it), and the
 * instance settings every request needs, in one statement: each statement is a read transaction
 * of its own, and those dominated the cost of an authenticated request.
 */
const tokenRows = (q: Db) =>
  q
    .selectFrom('api_tokens as t')
    .leftJoin('team_members as m', (j) => j.onRef('m.team_id', '=', 't.team_id').onRef('m.user_id', '=', 't.user_id'))
    .select(['t.id', 't.user_id', 't.team_id', 't.token_hash', 't.permissions', 't.expires_at', 't.last_used_at', 'm.role'])
    .select((eb) => Object.values(SETTING_KEYS).map((key) => eb.selectFrom('settings').select('value').where('key', '=', key).as(`setting_${key}`)));

const tokenById = perStore((db) => prepared(db, (q) => tokenRows(q).where('t.id', '=', param('id')), { reuse: true }));

type TokenRow = Awaited<ReturnType<ReturnType<typeof tokenById>>>[number];

/** A person's OAuth approval (an api_tokens row bound to a grant), read as tokenById reads a token. */
const approvalByGrant = perStore((db) => prepared(db, (q) => tokenRows(q).where('t.oauth_grant_id', '=', param('grant')), { reuse: true }));

/** What every request needs from a token row, worked out once per row read (rows are reused). */
interface TokenFacts {
  hash: Buffer;
  expiresAtMs: number | null;
  /** When last_used_at was last written, as far as this process knows. */
  lastUsedMs: number | null;
  permissions: ReadonlySet<Permission>;
  settings: InstanceSettings;
}

const factsOfRow = new WeakMap<TokenRow, TokenFacts>();

function factsOf(row: TokenRow): TokenFacts {
  let facts = factsOfRow.get(row);
  if (!facts) {
    const r = row as unknown as Record<string, string | null>;
    facts = {
      hash: Buffer.from(row.token_hash, 'hex'),
      expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at),
      lastUsedMs: row.last_used_at === null ? null : Date.parse(row.last_used_at),
      // Capped by the holder's role as read with the token (row.role is null when they left the
      // team, refused below): a role change is a new row, so it applies at the next request.
      permissions: capTo(row.role ?? 'member', (JSON.parse(row.permissions) as string[]).filter(isPermission)),
      settings: Object.freeze(decodeSettings((key) => r[`setting_${key}`])),
    };
    factsOfRow.set(row, facts);
  }
  return facts;
}

export interface Authenticated {
  caller: Omit<Caller, 'rootTeam'>;
  settings: InstanceSettings;
}

/**
 * Token → Caller. Every failure after the header is present is the same 401 "Invalid token.",
 * so ids cannot be probed. The row is reused only while the store is unchanged (checked on every
 * request: SQLite's data_version, PostgreSQL's auth counter): a deleted token, a departed member, a
 * role change or a settings change applies on the very next request, on every instance. The secret is
 * hashed and compared on every request.
 */
export async function authenticate(db: Db, access: RequestAccess): Promise<Authenticated> {
  const value = bearerFrom(access.authorization);
  if (value === undefined) throw new BerthError('unauthenticated');
  const parsed = parseToken(value);
  if (!parsed && access.oauthResource) return authenticateOAuth(db, access, value, access.oauthResource);
  if (!parsed) throw new BerthError('invalid_token');

  const [row] = await tokenById(db)({ id: parsed.id });

  const facts = row && factsOf(row);
  // Same hash and comparison whether or not the id exists.
  if (!secretMatches(parsed.secret, facts?.hash) || !row || !facts) throw new BerthError('invalid_token');
  const now = Date.now();
  if (facts.expiresAtMs !== null && facts.expiresAtMs <= now) throw new BerthError('invalid_token');
  if (row.role === null) throw new BerthError('invalid_token');

  await noteUse(db, row.id, facts, now);

  return {
    caller: { userId: row.user_id, teamId: row.team_id, tokenId: row.id, permissions: facts.permissions, sourceIp: access.sourceIp, door: doorOf(access) },
    settings: facts.settings,
  };
}

const doorOf = (access: RequestAccess): AuditDoor => access.door ?? (access.mcp ? 'mcp-http' : 'rest');

async function noteUse(db: Db, id: number, facts: TokenFacts, now: number): Promise<void> {
  if (facts.lastUsedMs === null || now - facts.lastUsedMs >= LAST_USED_GRANULARITY_MS) {
    // Noted on the reused row first: on PostgreSQL this write does not invalidate it (migration
    // 020 leaves last_used_at out), and the requests that overlap this one need not write again.
    facts.lastUsedMs = now;
    await db
      .updateTable('api_tokens')
      .set({ last_used_at: new Date(now).toISOString() })
      .where('id', '=', id)
      .execute();
  }
}

/**
 * An OAuth access token → the same Caller an API token makes: its grant's approval row gives
 * user, team and permissions (capped by the holder's current role, as for any token), narrowed
 * to the token's scopes. The approval row is what `berth token revoke` deletes, so a revoked
 * grant fails here at the next request; so do an expired grant and a departed member.
 */
async function authenticateOAuth(db: Db, access: RequestAccess, value: string, resource: string): Promise<Authenticated> {
  const claims = await findAccessToken(db, value, resource);
  if (!claims) throw new BerthError('invalid_token');
  const [row] = await approvalByGrant(db)({ grant: claims.grantId });
  if (!row || row.role === null) throw new BerthError('invalid_token');
  const facts = factsOf(row);
  const now = Date.now();
  if (facts.expiresAtMs !== null && facts.expiresAtMs <= now) throw new BerthError('invalid_token');
  await noteUse(db, row.id, facts, now);
  const scopes = new Set(claims.scopes);
  const permissions = new Set([...facts.permissions].filter((p) => scopes.has(p)));
  return {
    caller: { userId: row.user_id, teamId: row.team_id, tokenId: row.id, permissions, sourceIp: access.sourceIp, door: doorOf(access), oauth: { clientId: claims.clientId } },
    settings: facts.settings,
  };
}
