// The baseline for bench/mcp/run.mjs: a bare MCP server built the way SDK v2 documents it
// (docs/serving/http.md and @modelcontextprotocol/node's README): createMcpHandler with a factory
// that returns a fresh McpServer per request, toNodeHandler, node:http bound to loopback with the
// localhost Host/Origin guards. One tool, get_current_team, returns a constant team object with
// the same shape (and output schema) as berth's, so both answers are the same size.
//
//   node bench/mcp/bare-server.mjs http    → prints `listening on http://127.0.0.1:PORT/mcp`
//   node bench/mcp/bare-server.mjs stdio   → serves the same server on stdin/stdout
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

const TEAM = {
  id: 1,
  name: 'Root Team',
  description: "The instance's root team.",
  personal_team: false,
  created_at: '2026-11-21T00:00:00.000Z',
  updated_at: '2026-11-21T00:00:00.000Z',
};
const Team = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string().nullable(),
  personal_team: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

function buildServer() {
  const server = new McpServer({ name: 'bare', version: '1.0.0' });
  server.registerTool(
    'get_current_team',
    {
      description: 'The team of the current token (a constant here).',
      inputSchema: z.object({}),
      outputSchema: Team,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async () => ({ content: [{ type: 'text', text: JSON.stringify(TEAM) }], structuredContent: TEAM }),
  );
  return server;
}

/** The node:http request handler of the bare server (bench/mcp/inproc.mjs injects requests into it). */
export function bareNodeHandler() {
  const mcp = toNodeHandler(createMcpHandler(() => buildServer()));
  const validateHost = localhostHostValidation();
  const validateOrigin = localhostOriginValidation();
  return async (req, res) => {
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    await mcp(req, res);
  };
}

const main = process.argv[1] === fileURLToPath(import.meta.url);
if (main && process.argv[2] === 'stdio') {
  const { serveStdio } = await import('@modelcontextprotocol/server/stdio');
  serveStdio(() => buildServer());
} else if (main) {
  const server = http.createServer(bareNodeHandler());
  server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}/mcp`));
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
