import { z } from 'zod';

/** The proxy's container and network on every server that runs one (one proxy per server). */
export const PROXY_CONTAINER = 'berth-proxy';
export const PROXY_NETWORK = 'berth-proxy';
/** The default image when the server's proxy configuration names none (BERTH_PROXY_IMAGE changes it). */
export const DEFAULT_PROXY_IMAGE = 'caddy:2-alpine';
/** What the proxy publishes when its configuration has no ports: HTTP and HTTPS on every address. */
export const DEFAULT_PROXY_PORTS = ['80:80', '443:443'];

/** A server's proxy settings as stored (servers.proxy), with Coolify's names where Coolify has them. */
export const proxySettingsSchema = z.object({
  proxy_type: z.enum(['caddy', 'none']),
  /** Coolify's: redirect http:// to https:// for https domains, and unknown hosts to redirect_url. */
  redirect_enabled: z.boolean(),
  redirect_url: z.string().nullable(),
  /** berth: who signs the certificates of https:// domains: ACME (Let's Encrypt) or Caddy's own CA. */
  tls_issuer: z.enum(['acme', 'internal']),
  /** berth: the ACME account e-mail (expiry notices); none is allowed by Let's Encrypt. */
  acme_email: z.string().nullable(),
  /** berth: an ACME directory other than Let's Encrypt's (a staging or private CA). */
  acme_ca: z.string().nullable(),
  /** berth: the PEM root(s) a private ACME CA's own HTTPS is checked against (its certificates chain to it too). */
  acme_ca_root: z.string().nullable(),
  /** Coolify's saved proxy compose file (image, ports, environment); null: the defaults. */
  configuration: z.string().nullable(),
});
export type ProxySettings = z.infer<typeof proxySettingsSchema>;

export const PROXY_DEFAULTS: ProxySettings = {
  proxy_type: 'none',
  redirect_enabled: true,
  redirect_url: null,
  tls_issuer: 'acme',
  acme_email: null,
  acme_ca: null,
  acme_ca_root: null,
  configuration: null,
};

export const proxySettingsOf = (s: { proxy: string | null }): ProxySettings => ({ ...PROXY_DEFAULTS, ...(s.proxy ? (JSON.parse(s.proxy) as Partial<ProxySettings>) : {}) });

/** One host (and path prefix) the proxy sends to one container port. */
export interface ProxyRoute {
  scheme: 'http' | 'https';
  host: string;
  path: string;
  /** The container's name on the proxy's network, and its port. */
  upstream: string;
  port: number;
  gzip: boolean;
  stripPrefix: boolean;
}

/** How the proxy container runs: from the saved configuration, or the defaults. */
export interface ProxyRunSpec {
  image: string;
  /** compose-style "[ip:]host:container" strings. */
  ports: string[];
  environment: Record<string, string>;
}
