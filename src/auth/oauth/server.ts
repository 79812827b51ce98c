import './quiet-runtime-notice.js';
import type Provider from 'oidc-provider';
import type { Db } from '../../store/db.js';
import { loadOAuthKeys } from './keys.js';
import { buildOAuthProvider, resourceOf, type OAuthServerOptions } from './provider.js';

/**
 * The authorization server of one berth process, made once the public URL is known (after
 * listen, when berth chose its own port): the issuer must be the URL clients use.
 */
export class OAuthServer {
  private started?: { provider: Provider; issuer: string; csrfKey: string };

  constructor(
    private readonly db: Db,
    private readonly options: Omit<OAuthServerOptions, 'issuer' | 'keys'>,
  ) {}

  async start(issuer: string): Promise<void> {
    const keys = await loadOAuthKeys(this.db);
    this.started = { provider: buildOAuthProvider(this.db, { ...this.options, issuer, keys }), issuer, csrfKey: keys.csrfKey };
  }

  get ready(): boolean {
    return this.started !== undefined;
  }

  private get s() {
    if (!this.started) throw new Error('the OAuth server is not started yet');
    return this.started;
  }

  get provider(): Provider {
    return this.s.provider;
  }

  get issuer(): string {
    return this.s.issuer;
  }

  get csrfKey(): string {
    return this.s.csrfKey;
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
