import './quiet-runtime-notice.js';
// The named export: oidc-provider stays outside berth's bundle (scripts/bundle.mjs), and a bundled
// default import of an ES module required from CommonJS would be its namespace, not the class.
import { Provider, errors, type Configuration } from 'oidc-provider';
import type { Db } from '../../store/db.js';
import { StoreAdapter } from './adapter.js';
import type { OAuthKeys } from './keys.js';
import { OAUTH_ROUTES, resourceOf } from './routes.js';
import { SCOPES } from './scopes.js';

/** Its error classes, for the consent page's checks (this module is the one that loads the library). */
export { errors as oidcErrors };

export interface OAuthServerOptions {
  /** berth's public base URL (no trailing slash): the issuer; /mcp under it is the one resource. */
  issuer: string;
  keys: OAuthKeys;
  accessTokenTtlS: number;
  refreshTokenTtlS: number;
  grantTtlS: number;
  /** A registered client unused this long is removed (client-sweep.ts). */
  clientIdleDays: number;
  /** Behind a trusted proxy: X-Forwarded-* are believed (Koa's `proxy`). */
  trustProxy: boolean;
  /**
   * The outbound client for Client ID Metadata Documents: berth's guarded one (no private,
   * loopback or metadata addresses unless the operator allows them; no redirects).
   */
  fetch: (url: string) => Promise<{ status: number; text: string }>;
}

/** An http: URI whose host is not this machine (127.0.0.0/8, [::1], localhost). */
export function plainHttpElsewhere(uri: string): boolean {
  const u = URL.parse(uri);
  if (u?.protocol !== 'http:') return false;
  return !(u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(u.hostname));
}

/** Where oidc-provider sends the browser for sign-in and consent (src/console/consent-routes.ts). */
export const consentPath = (uid: string): string => `/oauth/consent/${uid}`;

/**
 * berth's authorization server: panva's oidc-provider (OpenID certified) configured down to
 * OAuth 2.1 for MCP clients: authorization code with PKCE S256 only, refresh tokens rotated on
 * every use (a replayed one revokes the grant), revocation (RFC 7009), dynamic registration
 * (RFC 7591) and Client ID Metadata Documents, resource indicators (RFC 8707) with /mcp as the
 * only resource. Opaque tokens in berth's store (adapter.ts). Consent is always asked: an earlier
 * approval is never reused silently, since the person picks a team and permissions each time.
 */
export function buildOAuthProvider(db: Db, opts: OAuthServerOptions): Provider {
  const resource = resourceOf(opts.issuer);
  const secure = opts.issuer.startsWith('https:');
  const configuration: Configuration = {
    adapter: (name: string) => new StoreAdapter(db, name, opts.clientIdleDays),
    clients: [],
    jwks: opts.keys.jwks,
    cookies: {
      keys: opts.keys.cookieKeys,
      names: { session: 'berth_oauth_session', interaction: 'berth_oauth_interaction', resume: 'berth_oauth_resume' },
      long: { httpOnly: true, sameSite: 'lax', secure, signed: true },
      short: { httpOnly: true, sameSite: 'lax', secure, signed: true },
    },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    // Known here so registration accepts them; what a token carries is the resource's scope
    // (getResourceServerInfo below), which the person chose on the consent page.
    scopes: ['openid', ...SCOPES],
    claims: { openid: ['sub'] },
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    // berth's one signing key is P-256; nothing it issues is a JWT today (opaque tokens).
    enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
    // RFC 8252 §7.3/§8.3: plain http only to this machine (the app's own listener); any other host
    // must be https (or, for native apps, the app's own scheme), or a code travels in the clear.
    // Checked at registration, for metadata documents, and when a stored client is loaded.
    extraClientMetadata: {
      properties: ['redirect_uris'],
      validator: (_ctx, key, value) => {
        if (key !== 'redirect_uris' || !Array.isArray(value)) return;
        for (const uri of value) {
          if (typeof uri === 'string' && plainHttpElsewhere(uri))
            throw new errors.InvalidClientMetadata("redirect_uris may use http only for loopback hosts (127.0.0.1, [::1], localhost); use https or the application's own scheme");
        }
      },
    },
    clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', id_token_signed_response_alg: 'ES256' },
    routes: OAUTH_ROUTES,
    interactions: { url: async (_ctx, interaction) => consentPath(interaction.uid) },
    // Every authorization asks the person (team and permissions are chosen per approval).
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: {
      AccessToken: opts.accessTokenTtlS,
      AuthorizationCode: 60,
      Grant: opts.grantTtlS,
      Interaction: 600,
      Session: 24 * 3600,
      // A refresh token never outlives its grant either way: refreshing loads the grant first.
      RefreshToken: opts.refreshTokenTtlS,
    },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      introspection: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      // A client revokes only its own tokens (public clients cannot prove more).
      revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => resource,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget(`the only resource here is ${resource}`);
          return { scope: SCOPES.join(' '), audience: resource, accessTokenFormat: 'opaque', accessTokenTTL: opts.accessTokenTtlS };
        },
      },
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
    } as Configuration['features'],
    // Errors the browser sees (a bad redirect URI, an unknown client): a plain page, never a redirect.
    renderError: async (ctx, out) => {
      const esc = (v: unknown) => String(v ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
      ctx.type = 'html';
      ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Cannot continue · berth</title></head><body><main><h1>This request cannot go on</h1><p id="oauth-error">${esc(out.error)}: ${esc(out.error_description)}</p></main></body></html>`;
    },
    fetch: async (input: string | URL | Request) => {
      const r = await opts.fetch(input instanceof Request ? input.url : String(input));
      return new Response(r.text, { status: r.status, headers: { 'content-type': 'application/json' } });
    },
  };
  const provider = new Provider(opts.issuer, configuration);
  provider.proxy = opts.trustProxy;
  return provider;
}
