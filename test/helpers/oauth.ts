/**
 * An OAuth client's side of berth's authorization server, for tests: a browser (cookie jar,
 * redirects followed by hand so the client's redirect URI can be caught) and an in-memory
 * OAuthClientProvider for the MCP SDK's client.
 */
import { randomBytes, createHash } from 'node:crypto';
import { request } from 'undici';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Db } from '../../src/store/db.js';
import { signInByLink } from './console.js';

export interface Page {
  status: number;
  url: string;
  location?: string;
  text: string;
}

/** A cookie-keeping HTTP client that follows redirects within berth and stops at any other origin. */
export class Browser {
  readonly cookies = new Map<string, string>();

  constructor(readonly origin: string) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(setCookie: string | string[] | undefined): void {
    for (const c of [setCookie ?? []].flat()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  /** One request; no redirect followed. */
  async send(method: 'GET' | 'POST', url: string, form?: URLSearchParams, headers: Record<string, string> = {}): Promise<Page> {
    const h: Record<string, string> = { cookie: this.cookieHeader(), ...headers };
    if (form) h['content-type'] = 'application/x-www-form-urlencoded';
    const r = await request(url, { method, headers: h, body: form?.toString() });
    this.keep(r.headers['set-cookie']);
    const location = r.headers.location ? new URL(String(r.headers.location), url).toString() : undefined;
    return { status: r.statusCode, url, location, text: await r.body.text() };
  }

  /** Follows redirects while they stay on berth; the last page, or the redirect that leaves. */
  async go(method: 'GET' | 'POST', url: string, form?: URLSearchParams): Promise<Page> {
    let page = await this.send(method, url, form);
    for (let i = 0; i < 10 && page.location && page.location.startsWith(this.origin); i++) page = await this.send('GET', page.location);
    return page;
  }
}

/** The consent form's fields as a browser would submit them (checked boxes, selected team). */
export function consentForm(page: Page): { action: string; csrf: string; team: string; checked: string[]; disabled: string[] } {
  const action = /<form method="post" action="([^"]+)"/.exec(page.text)?.[1];
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1];
  const team = /<option value="(\d+)" selected>/.exec(page.text)?.[1];
  if (!action || !csrf || !team) throw new Error(`not a consent page (${page.status}): ${page.text.slice(0, 300)}`);
  const boxes = [...page.text.matchAll(/<input type="checkbox" id="[^"]+" name="permission" value="([^"]+)"([^>]*)>/g)];
  return {
    action: action.replace(/&amp;/g, '&'),
    csrf,
    team,
    checked: boxes.filter((b) => b[2]!.includes('checked')).map((b) => b[1]!),
    disabled: boxes.filter((b) => b[2]!.includes('disabled')).map((b) => b[1]!),
  };
}

/** Signs a person in through the console's real login-link path; the browser then carries the session. */
export async function signIn(browser: Browser, db: Db, email: string): Promise<void> {
  const session = await signInByLink(browser.origin, db, email);
  for (const [k, v] of session.jar.cookies) browser.cookies.set(k, v);
}

/** A test server as OAuth clients address it: http://localhost:PORT, the issuer berth uses by default. */
export function atLocalhost<T extends { url: string }>(s: T): T {
  return Object.assign(Object.create(Object.getPrototypeOf(s) as object) as T, s, { url: s.url.replace('127.0.0.1', 'localhost') });
}

/** The MCP SDK's client-side OAuth state, in memory; the authorization URL is caught, not opened. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;
  lastState?: string;

  constructor(
    readonly redirect: string,
    readonly metadata: Partial<OAuthClientMetadata> = {},
    readonly clientMetadataUrl?: string,
  ) {}

  get redirectUrl(): string {
    return this.redirect;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test Agent',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...this.metadata,
    };
  }

  state(): string {
    return (this.lastState = randomBytes(12).toString('base64url'));
  }

  clientInformation() {
    return this.info;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.info = info;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(v: string): void {
    this.verifier = v;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no code verifier');
    return this.verifier;
  }
}

/** A PKCE pair (S256). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}
