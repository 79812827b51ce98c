import { parse as parseCookies, serialize } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomSecret, sameSecret, secretHash } from '../auth/secrets.js';
import { BerthError } from '../errors.js';
import { nowIso, type Db } from '../store/db.js';

/** A signed-in person, as every console page (and the OAuth consent page) sees them. */
export interface Person {
  userId: number;
  email: string;
  name: string;
  /** This session's CSRF token: every form of the session carries it back. */
  csrf: string;
  /** Hash of the session id (what the store keys it by). */
  sessionHash: string;
  expiresAt: string;
}

/** How long a sign-in lasts, whatever the person does: the console can mint root tokens. */
export const SESSION_TTL_MS = 12 * 3600_000;

/**
 * The console's cookies: the session, the signed-out CSRF token, a passkey ceremony's handle, and
 * where to go after signing in (sign-in.ts).
 */
export type CookieBase = 'session' | 'csrf' | 'webauthn' | 'next';

/** Field and header that carry the CSRF token back. */
export const CSRF_FIELD = '_csrf';
export const CSRF_HEADER = 'x-csrf-token';

export interface SessionOptions {
  /** BERTH_PUBLIC_URL: an https URL makes cookies Secure even behind a proxy that does not say so. */
  publicUrl: string | null;
  ttlMs?: number;
}

const personOf = new WeakMap<FastifyRequest, Person | null>();

/**
 * Sessions in berth's store, keyed by the SHA-256 of a random id that only the cookie holds, so
 * any instance answers and a copy of the store signs nobody in. Cookies are http-only,
 * SameSite=Lax, scoped to the whole site, and Secure (with the __Host- prefix) when the console
 * is served over https.
 */
export class Sessions {
  readonly ttlMs: number;

  constructor(
    private readonly db: Db,
    private readonly opts: SessionOptions,
  ) {
    this.ttlMs = opts.ttlMs ?? SESSION_TTL_MS;
  }

  /** Over https (directly, through a trusted proxy, or by the configured public URL). */
  secure(req: FastifyRequest): boolean {
    return req.protocol === 'https' || (this.opts.publicUrl?.startsWith('https:') ?? false);
  }

  cookieName(req: FastifyRequest, base: CookieBase): string {
    return this.secure(req) ? `__Host-berth_${base}` : `berth_${base}`;
  }

  readCookie(req: FastifyRequest, base: CookieBase): string | undefined {
    const header = req.headers.cookie;
    if (!header) return undefined;
    return parseCookies(header)[this.cookieName(req, base)] || undefined;
  }

  setCookie(req: FastifyRequest, reply: FastifyReply, base: CookieBase, value: string, maxAgeSeconds: number): void {
    const line = serialize(this.cookieName(req, base), value, { httpOnly: true, sameSite: 'lax', secure: this.secure(req), path: '/', maxAge: maxAgeSeconds });
    // Fastify appends each set-cookie header rather than replacing it.
    reply.header('set-cookie', line);
  }

  clearCookie(req: FastifyRequest, reply: FastifyReply, base: CookieBase): void {
    this.setCookie(req, reply, base, '', 0);
  }

  /** The person signed in on this request, or null (no cookie, unknown, signed out or expired). */
  async currentPerson(req: FastifyRequest): Promise<Person | null> {
    if (personOf.has(req)) return personOf.get(req)!;
    const id = this.readCookie(req, 'session');
    let person: Person | null = null;
    if (id && id.length <= 128) {
      const hash = secretHash(id);
      const row = await this.db
        .selectFrom('console_sessions as s')
        .innerJoin('users as u', 'u.id', 's.user_id')
        .select(['s.user_id', 's.csrf_token', 's.expires_at', 'u.email', 'u.name'])
        .where('s.id_hash', '=', hash)
        .executeTakeFirst();
      if (row && Date.parse(row.expires_at) > Date.now()) {
        person = { userId: row.user_id, email: row.email, name: row.name, csrf: row.csrf_token, sessionHash: hash, expiresAt: row.expires_at };
      } else if (row) {
        await this.db.deleteFrom('console_sessions').where('id_hash', '=', hash).execute();
      }
    }
    personOf.set(req, person);
    return person;
  }

  /**
   * Signs a user in on this reply: a new session (never one the browser brought along, so a
   * planted id is worthless), replacing the request's old one.
   */
  async start(req: FastifyRequest, reply: FastifyReply, userId: number): Promise<void> {
    const old = this.readCookie(req, 'session');
    if (old) await this.db.deleteFrom('console_sessions').where('id_hash', '=', secretHash(old)).execute();
    const id = randomSecret();
    const now = Date.now();
    await this.db.deleteFrom('console_sessions').where('expires_at', '<=', new Date(now).toISOString()).execute();
    await this.db
      .insertInto('console_sessions')
      .values({ id_hash: secretHash(id), user_id: userId, csrf_token: randomSecret(), created_at: nowIso(), expires_at: new Date(now + this.ttlMs).toISOString() })
      .execute();
    this.setCookie(req, reply, 'session', id, Math.floor(this.ttlMs / 1000));
    this.clearCookie(req, reply, 'csrf');
    personOf.delete(req);
  }

  /** Signs out: the session row is deleted (on every instance at once), the cookie cleared. */
  async end(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const id = this.readCookie(req, 'session');
    if (id) await this.db.deleteFrom('console_sessions').where('id_hash', '=', secretHash(id)).execute();
    this.clearCookie(req, reply, 'session');
    personOf.set(req, null);
  }

  /**
   * The CSRF token to put in this page's forms: the session's when signed in; otherwise a random
   * one in a cookie of its own (double submit), so the sign-in forms are protected too.
   */
  async csrfToken(req: FastifyRequest, reply: FastifyReply): Promise<string> {
    const person = await this.currentPerson(req);
    if (person) return person.csrf;
    let token = this.readCookie(req, 'csrf');
    if (!token || token.length > 128) {
      token = randomSecret();
      this.setCookie(req, reply, 'csrf', token, 24 * 3600);
    }
    return token;
  }

  /**
   * Refuses (403 csrf_failed) a state-changing request whose token is missing or wrong, or whose
   * Origin names another site. Call it on every POST, before anything changes.
   */
  async checkCsrf(req: FastifyRequest, presented: unknown): Promise<void> {
    if (originRefused(req, this.origin(req))) throw new BerthError('csrf_failed');
    const person = await this.currentPerson(req);
    const expected = person ? person.csrf : this.readCookie(req, 'csrf');
    if (typeof presented !== 'string' || !presented || !expected || !sameSecret(presented, expected)) throw new BerthError('csrf_failed');
  }

  /** The origin this request was made to (scheme and Host), or the configured public URL's. */
  origin(req: FastifyRequest): string {
    if (this.opts.publicUrl) return new URL(this.opts.publicUrl).origin;
    return `${req.protocol}://${req.host}`;
  }
}

/**
 * A state-changing request another site made: its Origin is "null" (a sandboxed or opaque
 * context) or names neither `own` (the public origin) nor the origin the request came to. No
 * Origin at all passes: the CSRF token is the check then.
 */
export function originRefused(req: FastifyRequest, own: string): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  return origin === 'null' || (origin !== own && origin !== `${req.protocol}://${req.host}`);
}
