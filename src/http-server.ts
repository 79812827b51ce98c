import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import type { Core } from './core/gate.js';
import type { Operation } from './core/operation.js';
import { buildHttpApp } from './http-api/app.js';
import { registerMcpRoute } from './mcp/http.js';
import type { ToolDefinition } from './mcp/tools/registry.js';

/**
 * The HTTP listener's app: the REST door under /api, with the MCP door (streamable HTTP) mounted
 * at /mcp. Assembled here so the two doors never import each other.
 */
export async function buildHttpServer(opts: { core: Core; operations: readonly Operation[]; tools: readonly ToolDefinition[]; config: Config; logger: Logger }): Promise<FastifyInstance> {
  const { tools, ...rest } = opts;
  const app = await buildHttpApp({ ...rest, mounted: [{ method: 'POST', path: '/mcp' }] });
  registerMcpRoute(app, { core: opts.core, tools, config: opts.config, logger: opts.logger });
  return app;
}
