import type { Provider } from 'oidc-provider';
import type { Db } from '../../store/db.js';
import { loadOAuthKeys, type OAuthKeys } from './keys.js';
import type { OAuthServerOptions } from './provider.js';
import { resourceOf } from './routes.js';

/** What provider.ts gives once loaded. */
export interface LoadedOAuth {
  provider: Provider;
  errors: typeof import('oidc-provider').errors;
}

/**
 * The authorization server of one berth process, made once the public URL is known (after
 * listen, when berth chose its own port): the issuer must be the URL clients use.
 */
export class OAuthServer {
  private started?: { issuer: string; keys: OAuthKeys };
  private loading?: Promise<LoadedOAuth>;

  constructor(
    private readonly db: Db,
    private readonly options: Omit<OAuthServerOptions, 'issuer' | 'keys'>,
  ) {}

  async start(issuer: string): Promise<void> {
    const keys = await loadOAuthKeys(this.db);
    this.started = { issuer, keys };
  }

  /**
   * oidc-provider (with Koa and jose) is loaded and configured at the first OAuth request, not at
   * start: most processes (and test servers) never answer one, and loading it took a second of
   * every start on a busy machine.
   */
  load(): Promise<LoadedOAuth> {
    const { issuer, keys } = this.s;
    this.loading ??= import('./provider.js').then((m) => ({ provider: m.buildOAuthProvider(this.db, { ...this.options, issuer, keys }), errors: m.oidcErrors }));
    return this.loading;
  }

  get ready(): boolean {
    return this.started !== undefined;
  }

  private get s() {
    if (!this.started) throw new Error('the OAuth server is not started yet');
    return this.started;
  }

  get issuer(): string {
    return this.s.issuer;
  }

  get csrfKey(): string {
    return this.s.keys.csrfKey;
  }

  /** The one protected resource (RFC 8707 audience of every token): the MCP endpoint. */
  get resource(): string {
    return resourceOf(this.s.issuer);
  }

  /** RFC 9728 metadata of /mcp, at the path-suffixed well-known URL the MCP spec prefers. */
  get resourceMetadataUrl(): string {
    return `${this.s.issuer}/.well-known/oauth-protected-resource/mcp`;
  }

  get grantTtlS(): number {
    return this.options.grantTtlS;
  }
}
