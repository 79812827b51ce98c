/**
 * The authorization server's fixed names, apart from oidc-provider (provider.ts), which is loaded
 * only when a process answers its first OAuth request.
 */

/** The protected resource every token is bound to (RFC 8707): the MCP endpoint. */
export const resourceOf = (issuer: string): string => `${issuer}/mcp`;

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/logout',
} as const;
