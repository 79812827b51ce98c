import type { ProxyRoute, ProxySettings } from '../core/model/proxy.js';

/** Where berth's config lives in the proxy container (written there, then loaded with `caddy reload`). */
export const CADDY_CONFIG_FILE = '/etc/caddy/berth.json';
/** A private ACME CA's root (acme_ca_root), written beside the config when set. */
export const ACME_CA_ROOT_FILE = '/etc/caddy/berth-acme-ca-root.pem';

type Json = Record<string, unknown>;

/** One route: the host (and path prefix), then strip, compress, forward. */
function route(r: ProxyRoute): Json {
  const match: Json = { host: [r.host] };
  if (r.path) match.path = [r.path, `${r.path}/*`];
  const handle: Json[] = [];
  if (r.path && r.stripPrefix) handle.push({ handler: 'rewrite', strip_path_prefix: r.path });
  if (r.gzip) handle.push({ handler: 'encode', encodings: { gzip: {} }, prefer: ['gzip'] });
  handle.push({ handler: 'reverse_proxy', upstreams: [{ dial: `${r.upstream}:${r.port}` }] });
  return { match: [match], handle, terminal: true };
}

/** What answers a host no route names: the redirect URL when set, a 404 otherwise. */
function fallback(s: ProxySettings): Json {
  if (s.redirect_enabled && s.redirect_url) return { handle: [{ handler: 'static_response', status_code: 302, headers: { Location: [s.redirect_url] } }] };
  return { handle: [{ handler: 'static_response', status_code: 404, body: 'No application answers at this domain.\n' }] };
}

/** Longer path prefixes first, so /api/v2 wins over /api and both over the bare host. */
const byPrefix = (a: ProxyRoute, b: ProxyRoute) => b.path.length - a.path.length || a.host.localeCompare(b.host);

/**
 * Caddy's JSON config for a server's routes (Caddy 2.6 and later): http:// domains on :80,
 * https:// domains on :443 with certificates from ACME or Caddy's internal CA, and with
 * redirect_enabled the http:// form of every https:// domain redirected to it. berth owns the
 * whole config: it is replaced at each change, never patched.
 */
export function caddyConfig(routes: readonly ProxyRoute[], s: ProxySettings): Json {
  const http = routes.filter((r) => r.scheme === 'http').sort(byPrefix);
  const https = routes.filter((r) => r.scheme === 'https').sort(byPrefix);
  const secureHosts = [...new Set(https.map((r) => r.host))];
  const plainHosts = new Set(http.map((r) => r.host));
  const httpRoutes: Json[] = http.map(route);
  const toHttps = secureHosts.filter((h) => !plainHosts.has(h));
  if (s.redirect_enabled && toHttps.length) {
    httpRoutes.push({
      match: [{ host: toHttps }],
      handle: [{ handler: 'static_response', status_code: 308, headers: { Location: ['https://{http.request.host}{http.request.uri}'] } }],
      terminal: true,
    });
  }
  httpRoutes.push(fallback(s));
  const servers: Json = { http: { listen: [':80'], routes: httpRoutes } };
  const apps: Json = { http: { servers } };
  if (https.length) {
    // berth writes the redirects itself (only with redirect_enabled), so Caddy's own are off.
    servers.https = { listen: [':443'], routes: [...https.map(route), fallback(s)], automatic_https: { disable_redirects: true } };
    const issuer =
      s.tls_issuer === 'internal'
        ? { module: 'internal' }
        : {
            module: 'acme',
            ...(s.acme_email ? { email: s.acme_email } : {}),
            ...(s.acme_ca ? { ca: s.acme_ca } : {}),
            // Trusted for the ACME CA's own HTTPS only (a private CA), not in any trust store.
            ...(s.acme_ca_root ? { trusted_roots_pem_files: [ACME_CA_ROOT_FILE] } : {}),
          };
    apps.tls = { automation: { policies: [{ subjects: secureHosts, issuers: [issuer] }] } };
    // The internal CA's root stays in the proxy's data volume; no trust store to install it in.
    apps.pki = { certificate_authorities: { local: { install_trust: false } } };
  }
  return { admin: { listen: 'localhost:2019' }, apps };
}
