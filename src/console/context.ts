import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { RelyingParty } from '../auth/passkeys.js';
import { BerthError } from '../errors.js';
import { hostAllowed, requestOrigin } from '../http-common/allowed-hosts.js';
import type { RateLimits, LimitSpec } from '../limits/rate-limits.js';
import { rateLimited } from '../limits/rate-limits.js';
import type { Mailer } from '../mail/mailer.js';
import type { Db } from '../store/db.js';
import type { ConnectedApps } from './apps.js';
import type { Core } from '../core/gate.js';
import type { Person, Sessions } from './session.js';

/** What the console's pages need, made once by whoever mounts it. */
export interface ConsoleDeps {
  db: Db;
  sessions: Sessions;
  limits: RateLimits;
  mailer: Mailer | null;
  logger: Logger;
  publicUrl: string | null;
  /** Host names a mailed link may point at when publicUrl is empty (allowed-hosts.ts); null: none. */
  linkHosts: readonly string[] | null;
  /** The OAuth grants shown under "Connected apps" (the authorization server plugs in here). */
  apps: ConnectedApps;
  /** The core, for the approvals queue (a decision runs the held call); the queue is absent without it. */
  core?: Core;
}

/**
 * Sign-in attempts per window (the instance's rate window, a minute by default): per source
 * address for every sign-in step, and per e-mail address for sending links, so neither one
 * address nor one victim's mailbox can be flooded.
 */
export const SIGN_IN_PER_ADDRESS: LimitSpec = { bucket: 'console-signin-addr', limit: 20 };
export const LINKS_PER_EMAIL: LimitSpec = { bucket: 'console-link-email', limit: 3 };

export async function charge(deps: ConsoleDeps, spec: LimitSpec, key: string): Promise<void> {
  const d = await deps.limits.charge(spec, key);
  if (!d.allowed) throw rateLimited(d);
}

/** The relying party of this request: the public URL's host when configured, else the host asked for. */
export function relyingParty(deps: ConsoleDeps, req: FastifyRequest): RelyingParty {
  if (deps.publicUrl) {
    const u = new URL(deps.publicUrl);
    return { id: u.hostname, origin: u.origin, name: 'berth' };
  }
  return { id: req.hostname, origin: `${req.protocol}://${req.host}`, name: 'berth' };
}

/**
 * Where links in mail point: the public URL, else the address this request came to when its host
 * is one the operator allowed; else null (no link is mailed). Anyone can send any Host header: a
 * link built from it would carry a victim's sign-in token to the sender's site.
 */
export function baseUrl(deps: ConsoleDeps, req: FastifyRequest): string | null {
  if (deps.publicUrl) return deps.publicUrl;
  if (!hostAllowed(deps.linkHosts, req.host)) return null;
  return requestOrigin(req.protocol, req.host, req.socket.localPort);
}

/** A local path to go on to after signing in; anything else (another site, //host, \\) is the home page. */
export function safeNext(value: unknown): string {
  if (typeof value !== 'string' || value.length > 2000) return '';
  return /^\/(?![/\\])[^\s\\]*$/.test(value) ? value : '';
}

/** The signed-in person, or a redirect to the sign-in page that comes back here afterwards. */
export async function personOrRedirect(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply): Promise<Person | null> {
  const person = await deps.sessions.currentPerson(req);
  if (!person) {
    // Back to this page afterwards; a form post (whose token died with the session) starts over.
    void reply.redirect(req.method === 'GET' ? `/login?next=${encodeURIComponent(req.url)}` : '/login', 303);
    return null;
  }
  return person;
}

/** For the JSON endpoints the pages' scripts call. */
export async function personOr401(deps: ConsoleDeps, req: FastifyRequest): Promise<Person> {
  const person = await deps.sessions.currentPerson(req);
  if (!person) throw new BerthError('unauthenticated');
  return person;
}

/** A form's fields: strings, or arrays of them for repeated names (checkboxes). */
export type FormFields = Record<string, string | string[] | undefined>;

export function formOf(req: FastifyRequest): FormFields {
  const b = req.body;
  return b && typeof b === 'object' && !Array.isArray(b) ? (b as FormFields) : {};
}

export const field = (f: FormFields, name: string): string => {
  const v = f[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? (v[0] ?? '') : '';
};

export const fields = (f: FormFields, name: string): string[] => {
  const v = f[name];
  return typeof v === 'string' ? [v] : Array.isArray(v) ? v : [];
};
