import { hash } from 'node:crypto';
import { perStore } from '../../store/cached.js';
import type { Db } from '../../store/db.js';
import { param, prepared } from '../../store/prepared.js';
import { permissionsOfScope } from './scopes.js';
import type { Permission } from '../permissions.js';

/** What an OAuth access token says, once found, unexpired and bound to the expected resource. */
export interface AccessTokenClaims {
  grantId: string;
  clientId: string;
  scopes: Permission[];
}

// Opaque tokens from oidc-provider: 43 base64url characters; anything far off is not one.
const SHAPE = /^[A-Za-z0-9_-]{20,128}$/;

const recordByHash = perStore((db) => prepared(db, (q) => q.selectFrom('oauth_store').select(['payload', 'expires_at']).where('model', '=', 'AccessToken').where('id_hash', '=', param('h'))));

/**
 * The resource server's check of an access token issued by berth's authorization server: looked
 * up by the SHA-256 of its value (an unguessable 256-bit value; the store keeps only hashes),
 * refused when expired or when its audience is not this resource (RFC 8707: a token issued for
 * another resource is not accepted here). Whether its grant still stands is the caller's next
 * step (the approval row, read with the holder's membership).
 */
export async function findAccessToken(db: Db, value: string, resource: string): Promise<AccessTokenClaims | null> {
  if (!SHAPE.test(value)) return null;
  const [row] = await recordByHash(db)({ h: hash('sha256', value, 'hex') });
  if (!row || row.expires_at === null || Number(row.expires_at) <= Date.now()) return null;
  const p = JSON.parse(row.payload) as { kind?: string; exp?: number; aud?: string | string[]; grantId?: string; clientId?: string; scope?: string };
  if (p.kind !== 'AccessToken' || !p.grantId || !p.clientId) return null;
  if (typeof p.exp !== 'number' || p.exp * 1000 <= Date.now()) return null;
  const aud = Array.isArray(p.aud) ? p.aud : [p.aud];
  if (aud.length !== 1 || aud[0] !== resource) return null;
  return { grantId: p.grantId, clientId: p.clientId, scopes: permissionsOfScope(p.scope) };
}
