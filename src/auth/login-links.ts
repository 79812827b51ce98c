import { z } from 'zod';
import { validationError } from '../errors.js';
import { nowIso, type Db } from '../store/db.js';
import { randomSecret, secretHash } from './secrets.js';

/** How long a login link works: long enough to switch to the mail client, short enough to be stale soon. */
export const LOGIN_LINK_TTL_MS = 15 * 60_000;

/** The path a link opens; its token goes in the query (the page asks before it signs in). */
export const LOGIN_LINK_PATH = '/login/link';

const email = z
  .email()
  .max(254)
  .transform((e) => e.toLowerCase());

export interface IssuedLink {
  userId: number;
  email: string;
  /** The one-time secret; only its hash is stored. */
  token: string;
  expiresAt: string;
}

export function linkUrl(base: string, token: string): string {
  return `${base.replace(/\/+$/, '')}${LOGIN_LINK_PATH}?token=${encodeURIComponent(token)}`;
}

/** The user with this address, or undefined (callers that must not reveal it answer the same either way). */
export async function userByEmail(db: Db, address: string): Promise<{ id: number; email: string } | undefined> {
  const r = email.safeParse(address);
  if (!r.success) return undefined;
  return db.selectFrom('users').select(['id', 'email']).where('email', '=', r.data).executeTakeFirst();
}

/**
 * A one-time sign-in link for a user, by e-mail. Unknown addresses are a 422 here: only the CLI
 * (an administrator) and the mail path (which checks first and answers the same either way) call it.
 */
export async function issueLoginLink(db: Db, address: string, now = Date.now()): Promise<IssuedLink> {
  const parsed = email.safeParse(address);
  if (!parsed.success) throw validationError({ email: ['Enter a valid e-mail address.'] });
  const user = await userByEmail(db, parsed.data);
  if (!user) throw validationError({ email: [`No user with e-mail ${parsed.data}.`] });
  const token = randomSecret();
  const expiresAt = new Date(now + LOGIN_LINK_TTL_MS).toISOString();
  // Expired links of anyone are dropped on the way: the table holds only live ones.
  await db.deleteFrom('login_links').where('expires_at', '<=', new Date(now).toISOString()).execute();
  await db
    .insertInto('login_links')
    .values({ token_hash: secretHash(token), user_id: user.id, created_at: nowIso(), expires_at: expiresAt })
    .execute();
  return { userId: user.id, email: user.email, token, expiresAt };
}

/** Whether a link would still sign in (for the confirmation page; consuming decides). */
export async function loginLinkLive(db: Db, token: string, now = Date.now()): Promise<boolean> {
  const row = await db.selectFrom('login_links').select('expires_at').where('token_hash', '=', secretHash(token)).executeTakeFirst();
  return row !== undefined && Date.parse(row.expires_at) > now;
}

/**
 * Uses a link up: one statement deletes it and returns its user, so of two requests racing with
 * the same link (or two instances) exactly one signs in. Unknown, used and expired links are all
 * null.
 */
export async function consumeLoginLink(db: Db, token: string, now = Date.now()): Promise<number | null> {
  if (!token || token.length > 256) return null;
  const row = await db.deleteFrom('login_links').where('token_hash', '=', secretHash(token)).returning(['user_id', 'expires_at']).executeTakeFirst();
  if (!row || Date.parse(row.expires_at) <= now) return null;
  return row.user_id;
}
