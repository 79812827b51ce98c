import { request } from 'undici';
import { issueLoginLink, linkUrl } from '../../src/auth/login-links.js';
import type { Db } from '../../src/store/db.js';

/** Cookies a test carries between requests, as a browser would (name → value). */
export class Jar {
  readonly cookies = new Map<string, string>();

  take(setCookie: string | string[] | undefined): void {
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export interface PageReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request with the jar's cookies; a form (object) is sent urlencoded, as a browser posts it. */
export async function browse(base: string, jar: Jar, method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>, headers: Record<string, string> = {}): Promise<PageReply> {
  let body: string | undefined;
  const h: Record<string, string> = { ...headers };
  if (jar.cookies.size) h.cookie = jar.header();
  if (form) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of Array.isArray(v) ? v : [v]) p.append(k, one);
    body = p.toString();
    h['content-type'] ??= 'application/x-www-form-urlencoded';
  }
  const res = await request(base + path, { method, headers: h, body });
  jar.take(res.headers['set-cookie']);
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

/** The CSRF token a page's forms carry (the first one). */
export function csrfOf(page: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(page) ?? /<meta name="csrf-token" content="([^"]+)"/.exec(page);
  if (!m) throw new Error('no CSRF token on the page');
  return m[1]!;
}

export interface ConsoleSession {
  jar: Jar;
  /** The session's CSRF token (what its forms carry). */
  csrf: string;
  /** The Cookie header value that carries the session. */
  cookie: string;
}

/**
 * Signs a person in through the real path: a login link made the way `berth login-link` makes
 * it, opened, and confirmed with the page's form. Returns the session's cookie and CSRF token.
 */
export async function signInByLink(base: string, db: Db, email: string): Promise<ConsoleSession> {
  const link = await issueLoginLink(db, email);
  const path = new URL(linkUrl(base, link.token)).pathname + new URL(linkUrl(base, link.token)).search;
  const jar = new Jar();
  const page = await browse(base, jar, 'GET', path);
  if (page.status !== 200) throw new Error(`login link page answered ${page.status}`);
  const done = await browse(base, jar, 'POST', '/login/link', { _csrf: csrfOf(page.text), token: link.token });
  if (done.status !== 303) throw new Error(`login link answered ${done.status}: ${done.text}`);
  const home = await browse(base, jar, 'GET', '/passkeys');
  return { jar, csrf: csrfOf(home.text), cookie: jar.header() };
}
