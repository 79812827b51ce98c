import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { nowIso, type Db } from '../store/db.js';
import { randomSecret, secretHash } from './secrets.js';

/**
 * Passkeys (WebAuthn) through @simplewebauthn/server: berth keeps the challenges (in the store, so
 * the instance that verifies need not be the one that asked) and the credentials' public keys.
 */

/** Where the browser must be: the relying party id (a host name) and the page origin. */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

/** A challenge is answered within this long or not at all. */
const CHALLENGE_TTL_MS = 5 * 60_000;

export interface PendingChallenge {
  /** A random handle the browser keeps in a cookie; only its hash is stored. */
  handle: string;
}

async function keepChallenge(db: Db, purpose: 'register' | 'authenticate', userId: number | null, challenge: string): Promise<PendingChallenge> {
  const handle = randomSecret();
  const now = Date.now();
  await db.deleteFrom('webauthn_challenges').where('expires_at', '<=', new Date(now).toISOString()).execute();
  await db
    .insertInto('webauthn_challenges')
    .values({ id_hash: secretHash(handle), purpose, user_id: userId, challenge, expires_at: new Date(now + CHALLENGE_TTL_MS).toISOString() })
    .execute();
  return { handle };
}

/** Takes a challenge out (one use): the same handle never verifies twice. */
async function takeChallenge(db: Db, handle: string | undefined, purpose: 'register' | 'authenticate'): Promise<{ challenge: string; userId: number | null } | null> {
  if (!handle || handle.length > 128) return null;
  const row = await db.deleteFrom('webauthn_challenges').where('id_hash', '=', secretHash(handle)).returning(['purpose', 'user_id', 'challenge', 'expires_at']).executeTakeFirst();
  if (!row || row.purpose !== purpose || Date.parse(row.expires_at) <= Date.now()) return null;
  return { challenge: row.challenge, userId: row.user_id };
}

export interface PasskeyView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export async function listPasskeys(db: Db, userId: number): Promise<PasskeyView[]> {
  return db.selectFrom('passkeys').select(['credential_id as id', 'name', 'created_at', 'last_used_at']).where('user_id', '=', userId).orderBy('created_at').execute();
}

/** Deletes one of the person's own passkeys; false when there is no such passkey of theirs. */
export async function deletePasskey(db: Db, userId: number, credentialId: string): Promise<boolean> {
  const r = await db.deleteFrom('passkeys').where('user_id', '=', userId).where('credential_id', '=', credentialId).executeTakeFirst();
  return r.numDeletedRows > 0n;
}

/** Options for adding a passkey to a signed-in user; their existing ones are excluded. */
export async function registrationOptions(
  db: Db,
  rp: RelyingParty,
  user: { id: number; email: string; name: string },
): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; pending: PendingChallenge }> {
  const existing = await db.selectFrom('passkeys').select(['credential_id', 'transports']).where('user_id', '=', user.id).execute();
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.name,
    attestationType: 'none',
    excludeCredentials: existing.map((c) => ({ id: c.credential_id, transports: JSON.parse(c.transports) as string[] })),
    // Discoverable, so a later sign-in needs no e-mail first.
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
  return { options, pending: await keepChallenge(db, 'register', user.id, options.challenge) };
}

/** Verifies a new passkey and keeps it; null when the response does not verify. */
export async function finishRegistration(db: Db, rp: RelyingParty, userId: number, handle: string | undefined, response: RegistrationResponseJSON, name: string): Promise<PasskeyView | null> {
  const pending = await takeChallenge(db, handle, 'register');
  if (!pending || pending.userId !== userId) return null;
  let verified;
  try {
    verified = await verifyRegistrationResponse({ response, expectedChallenge: pending.challenge, expectedOrigin: rp.origin, expectedRPID: rp.id, requireUserVerification: false });
  } catch {
    return null;
  }
  if (!verified.verified) return null;
  const c = verified.registrationInfo.credential;
  const row = {
    credential_id: c.id,
    user_id: userId,
    name: name.trim().slice(0, 100) || 'Passkey',
    public_key: Buffer.from(c.publicKey).toString('base64url'),
    counter: c.counter,
    transports: JSON.stringify(c.transports ?? []),
    created_at: nowIso(),
    last_used_at: null,
  };
  const taken = await db.selectFrom('passkeys').select('credential_id').where('credential_id', '=', c.id).executeTakeFirst();
  if (taken) return null;
  await db.insertInto('passkeys').values(row).execute();
  return { id: row.credential_id, name: row.name, created_at: row.created_at, last_used_at: null };
}

/** Options for signing in with any passkey of this site (discoverable credentials). */
export async function authenticationOptions(db: Db, rp: RelyingParty): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; pending: PendingChallenge }> {
  const options = await generateAuthenticationOptions({ rpID: rp.id, userVerification: 'preferred' });
  return { options, pending: await keepChallenge(db, 'authenticate', null, options.challenge) };
}

/** The user a passkey response signs in, or null; the signature counter moves forward. */
export async function finishAuthentication(db: Db, rp: RelyingParty, handle: string | undefined, response: AuthenticationResponseJSON): Promise<number | null> {
  const pending = await takeChallenge(db, handle, 'authenticate');
  if (!pending || typeof response?.id !== 'string') return null;
  const key = await db.selectFrom('passkeys').selectAll().where('credential_id', '=', response.id).executeTakeFirst();
  if (!key) return null;
  let verified;
  try {
    verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: pending.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: key.credential_id, publicKey: Buffer.from(key.public_key, 'base64url'), counter: Number(key.counter), transports: JSON.parse(key.transports) as string[] },
      requireUserVerification: false,
    });
  } catch {
    return null;
  }
  if (!verified.verified) return null;
  // A counter that went backwards means a cloned authenticator: the library refuses it above.
  await db.updateTable('passkeys').set({ counter: verified.authenticationInfo.newCounter, last_used_at: nowIso() }).where('credential_id', '=', key.credential_id).execute();
  return key.user_id;
}
