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
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
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

type Purpose = 'register' | 'authenticate' | 'approve';

async function keepChallenge(db: Db, purpose: Purpose, userId: number | null, challenge: string): Promise<PendingChallenge> {
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
async function takeChallenge(db: Db, handle: string | undefined, purpose: Purpose): Promise<{ challenge: string; userId: number | null } | null> {
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
  return pending ? verifyAssertion(db, rp, pending.challenge, response, { requireUserVerification: false }) : null;
}

/** Whether a person has a passkey: then approving a held call needs a check with one. */
export async function hasPasskey(db: Db, userId: number): Promise<boolean> {
  return Boolean(await db.selectFrom('passkeys').select('credential_id').where('user_id', '=', userId).limit(1).executeTakeFirst());
}

/**
 * What a passkey check at approve signs (issue 39): its challenge is 32 random bytes followed by
 * this digest of the approval and the arguments hash the person was shown, so an assertion made
 * for one approval (or for other arguments) verifies for no other.
 */
const approvalBinding = (approvalUuid: string, argsHash: string) => createHash('sha256').update(`berth-approve\0${approvalUuid}\0${argsHash}`).digest();

/** Options for the signed-in person's passkey check at approve: their own passkeys, user verification required. */
export async function approvalCheckOptions(
  db: Db,
  rp: RelyingParty,
  userId: number,
  approval: { uuid: string; argsHash: string },
): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; pending: PendingChallenge }> {
  const keys = await db.selectFrom('passkeys').select(['credential_id', 'transports']).where('user_id', '=', userId).execute();
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: keys.map((k) => ({ id: k.credential_id, transports: JSON.parse(k.transports) as string[] })),
    userVerification: 'required',
    challenge: new Uint8Array(Buffer.concat([randomBytes(32), approvalBinding(approval.uuid, approval.argsHash)])),
  });
  return { options, pending: await keepChallenge(db, 'approve', userId, options.challenge) };
}

/**
 * Whether a passkey response is this person's check for this approval and arguments hash: the
 * challenge is taken once (a replayed response verifies nothing), it must have been made for
 * this person and bound to this approval, the passkey must be theirs, and it must say the person
 * was verified (PIN, biometrics), not only present.
 */
export async function finishApprovalCheck(
  db: Db,
  rp: RelyingParty,
  userId: number,
  handle: string | undefined,
  response: AuthenticationResponseJSON,
  approval: { uuid: string; argsHash: string },
): Promise<boolean> {
  const pending = await takeChallenge(db, handle, 'approve');
  if (!pending || pending.userId !== userId) return false;
  const bound = Buffer.from(pending.challenge, 'base64url').subarray(32);
  const want = approvalBinding(approval.uuid, approval.argsHash);
  if (bound.length !== want.length || !timingSafeEqual(bound, want)) return false;
  return (await verifyAssertion(db, rp, pending.challenge, response, { requireUserVerification: true, userId })) === userId;
}

/** Verifies an assertion against a stored challenge (of the given user's passkeys only, when named); the user, or null. */
async function verifyAssertion(db: Db, rp: RelyingParty, challenge: string, response: AuthenticationResponseJSON, opts: { requireUserVerification: boolean; userId?: number }): Promise<number | null> {
  if (typeof response?.id !== 'string') return null;
  let q = db.selectFrom('passkeys').selectAll().where('credential_id', '=', response.id);
  if (opts.userId !== undefined) q = q.where('user_id', '=', opts.userId);
  const key = await q.executeTakeFirst();
  if (!key) return null;
  let verified;
  try {
    verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: key.credential_id, publicKey: Buffer.from(key.public_key, 'base64url'), counter: Number(key.counter), transports: JSON.parse(key.transports) as string[] },
      requireUserVerification: opts.requireUserVerification,
    });
  } catch {
    return null;
  }
  if (!verified.verified) return null;
  // A counter that went backwards means a cloned authenticator: the library refuses it above.
  await db.updateTable('passkeys').set({ counter: verified.authenticationInfo.newCounter, last_used_at: nowIso() }).where('credential_id', '=', key.credential_id).execute();
  return key.user_id;
}
