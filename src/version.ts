/** berth's own version (package.json's, checked by a test): --version, OpenAPI's info.version, X-Berth-Version, MCP serverInfo. */
export const BERTH_VERSION = '0.1.0';
/**
 * The Coolify API version whose paths, fields and status codes berth's /api/v1 follows (the
 * operation list berth's coverage is measured against, scripts/coolify-coverage.mjs). It is what
 * GET /api/v1/version answers, as Coolify does, so clients that gate features on Coolify's version
 * turn them on (they answered berth's 0.1.0 by switching features off).
 */
export const COOLIFY_API_VERSION = '4.3.11';
