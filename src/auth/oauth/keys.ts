import './quiet-runtime-notice.js';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { JWK } from 'oidc-provider';
import type { Db } from '../../store/db.js';

/** The authorization server's own secrets: a signing key and the cookie-signing keys. */
export interface OAuthKeys {
  jwks: { keys: JWK[] };
  cookieKeys: string[];
  /** Signs the consent form's CSRF token. */
  csrfKey: string;
}

const KEY = 'oauth_keys';

/**
 * Made once per store (the first instance to start wins; the others read its keys), so every
 * instance signs cookies and tokens alike and a flow may move between instances. Kept in the
 * settings table, which only the operator's store access reaches.
 */
export async function loadOAuthKeys(db: Db): Promise<OAuthKeys> {
  const existing = await db.selectFrom('settings').select('value').where('key', '=', KEY).executeTakeFirst();
  if (existing) return JSON.parse(existing.value) as OAuthKeys;
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...(privateKey.export({ format: 'jwk' }) as JWK), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'ES256' };
  const fresh: OAuthKeys = { jwks: { keys: [jwk] }, cookieKeys: [randomBytes(32).toString('base64url')], csrfKey: randomBytes(32).toString('base64url') };
  await db
    .insertInto('settings')
    .values({ key: KEY, value: JSON.stringify(fresh) })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const stored = await db.selectFrom('settings').select('value').where('key', '=', KEY).executeTakeFirstOrThrow();
  return JSON.parse(stored.value) as OAuthKeys;
}
