import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import type { Core } from './core/gate.js';
import type { Operation } from './core/operation.js';
import { buildHttpApp } from './http-api/app.js';
import { registerMcpRoute } from './mcp/http.js';
import type { ToolDefinition } from './mcp/tools/registry.js';
import type { OAuthServer } from './auth/oauth/server.js';
import { registerOAuthRoutes } from './console/oauth-routes.js';
import { nobodySignedIn, type CurrentPerson } from './console/person.js';
import { accessOf } from './http-common/access.js';

interface HttpServerOptions {
  core: Core;
  operations: readonly Operation[];
  tools: readonly ToolDefinition[];
  config: Config;
  logger: Logger;
  /** berth's authorization server for /mcp (absent: API tokens only). */
  oauth?: OAuthServer;
  /** The console's sign-in, for the consent page. */
  currentPerson?: CurrentPerson;
}

/**
 * The HTTP listener's app: the REST door under /api, with the MCP door (streamable HTTP) mounted
 * at /mcp and, when there is one, the authorization server's routes for it. Assembled here so
 * the doors never import each other.
 */
export async function buildHttpServer(opts: HttpServerOptions): Promise<FastifyInstance> {
  const { tools, oauth, currentPerson, ...rest } = opts;
  const { core, config, logger } = opts;
  const app = await buildHttpApp({ ...rest, mounted: [{ method: 'POST', path: '/mcp' }] });
  if (oauth) {
    registerOAuthRoutes(app, {
      db: core.deps.db,
      oauth,
      currentPerson: currentPerson ?? nobodySignedIn,
      chargeAddress: (req) => core.chargeAddress(accessOf(req)),
      limits: core.deps.limits,
      registrationsPerHour: config.oauthRegistrationsPerHour,
    });
  }
  registerMcpRoute(app, { core, tools, config, logger, ...(oauth ? { oauth } : {}) });
  return app;
}
