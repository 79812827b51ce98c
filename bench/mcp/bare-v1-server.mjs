// The cold-start baseline of issue 28: a bare MCP server on SDK v1 (@modelcontextprotocol/sdk,
// the generation most published servers still use) with one tool, on stdio, built the way its
// README documents it. get_current_team returns the same constant team as bare-server.mjs.
//
//   node bench/mcp/bare-v1-server.mjs   → serves on stdin/stdout until stdin ends
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

const TEAM = {
  id: 1,
  name: 'Root Team',
  description: "The instance's root team.",
  personal_team: false,
  created_at: '2026-11-21T00:00:00.000Z',
  updated_at: '2026-11-21T00:00:00.000Z',
};

const server = new McpServer({ name: 'bare-v1', version: '1.0.0' });
server.registerTool(
  'get_current_team',
  {
    description: 'The team of the current token (a constant here).',
    inputSchema: {},
    outputSchema: { id: z.number().int(), name: z.string(), description: z.string().nullable(), personal_team: z.boolean(), created_at: z.string(), updated_at: z.string() },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  async () => ({ content: [{ type: 'text', text: JSON.stringify(TEAM) }], structuredContent: TEAM }),
);
await server.connect(new StdioServerTransport());
