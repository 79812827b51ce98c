// berth lists its tools itself (src/mcp/tools/listing.ts) instead of registering them with the
// SDK's McpServer, which it used only to list them. This holds the two to the same bytes: an
// McpServer given the tools as berth used to register them, and berth's server for the same
// catalogue, both behind the SDK's in-memory transport, answer tools/list identically.
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer, type JSONRPCMessage, type Server } from '@modelcontextprotocol/server';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { buildMcpServer, catalogueFor, restatesName, SERVER_INFO } from '../../src/mcp/server.js';
import { tools } from '../../src/mcp/tools/index.js';
import { META_TOOLS } from '../../src/mcp/tools/meta.js';

/** The raw tools/list answer a server sends a v2 client (its result as it went on the wire). */
async function rawToolsList(server: McpServer | Server): Promise<string> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const sent: JSONRPCMessage[] = [];
  const send = serverSide.send.bind(serverSide);
  serverSide.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  await server.connect(serverSide);
  const client = new Client({ name: 'parity', version: '1.0.0' });
  await client.connect(clientSide);
  await client.listTools();
  await client.close();
  const answer = sent.find((m) => 'result' in m && typeof m.result === 'object' && m.result !== null && 'tools' in m.result);
  if (!answer || !('result' in answer)) throw new Error('no tools/list answer');
  return JSON.stringify(answer.result);
}

/** An McpServer with the catalogue's tools registered as buildMcpServer registered them before. */
function sdkListing(spec: string) {
  const catalogue = catalogueFor(tools, spec, false);
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
  const defs = [...tools.filter((t) => catalogue.listed.has(t.name)), ...(catalogue.listed.size < tools.length ? META_TOOLS.filter((m) => !m.needsListChanges) : [])];
  for (const t of defs) {
    server.registerTool(
      t.name,
      {
        ...(restatesName(t) ? {} : { title: t.title }),
        description: t.description,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        ...(Object.keys(t.annotations).length ? { annotations: t.annotations } : {}),
      },
      async () => ({ content: [] }),
    );
  }
  return server;
}

const berth = (spec: string) =>
  buildMcpServer({
    logger: pino({ level: 'silent' }),
    catalogue: catalogueFor(tools, spec, false),
    all: tools,
    execute: async () => {
      throw new Error('not called');
    },
  });

describe('tools/list', () => {
  it.each(['default', 'all', 'applications,databases'])(
    'lists the %s toolsets byte for byte as the SDK McpServer would',
    async (spec) => {
      const ours = await rawToolsList(berth(spec));
      expect(ours).toBe(await rawToolsList(sdkListing(spec)));
      expect(JSON.parse(ours).tools.length).toBeGreaterThan(3);
    },
    120_000,
  );
});
