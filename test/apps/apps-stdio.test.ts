/**
 * MCP Apps over stdio (`berth mcp`), both eras: a client that declares io.modelcontextprotocol/ui
 * at connect gets the linked tools, the follow tool and the views; one that does not sees none of
 * it. Needs dist/bundle/cli.js (npm run build).
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UI_EXTENSION, VIEW_MIME, VIEWS } from '../../src/mcp/apps/views.js';
import { CLI } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';
import { buildWorld, type World } from '../helpers/world.js';

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0 } as never);
  w = await buildWorld(s);
}, 120_000);
afterAll(() => s.stop());

type Any = Client | V1Client;
const capabilities = { extensions: { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME] } } } as never;

async function connect(kind: 'v2-modern' | 'v1', ui: boolean): Promise<Any> {
  const params = {
    command: process.execPath,
    args: [CLI, 'mcp', '--data', s.dataDir, '--toolsets', 'all'],
    env: { BERTH_TOKEN: s.rootToken, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir) },
    stderr: 'pipe' as const,
  };
  if (kind === 'v1') {
    const c = new V1Client({ name: 't', version: '1' }, ui ? { capabilities } : undefined);
    await c.connect(new V1StdioTransport(params));
    return c;
  }
  const c = new Client({ name: 't', version: '1' }, { versionNegotiation: { mode: 'auto' }, ...(ui ? { capabilities } : {}) });
  await c.connect(new StdioClientTransport(params));
  return c;
}

type Tool = { name: string; _meta?: Record<string, unknown> };

describe.each(['v2-modern', 'v1'] as const)('MCP Apps over stdio, %s client', (kind) => {
  it('without the extension: no _meta, no follow tool, no ui:// resource', { timeout: 60_000 }, async () => {
    const c = await connect(kind, false);
    try {
      const tools = ((await c.listTools()) as { tools: Tool[] }).tools;
      expect(tools.filter((t) => t._meta !== undefined)).toEqual([]);
      expect(tools.some((t) => t.name === 'follow_view')).toBe(false);
      const resources = ((await c.listResources()) as { resources: Array<{ uri: string }> }).resources;
      expect(resources.filter((r) => r.uri.startsWith('ui://'))).toEqual([]);
      await expect(c.readResource({ uri: VIEWS[1]!.uri })).rejects.toThrow(/not found/i);
    } finally {
      await c.close();
    }
  });

  it('with it: linked tools, the views, and follow_view waking on a REST change', { timeout: 60_000 }, async () => {
    const c = await connect(kind, true);
    try {
      const tools = ((await c.listTools()) as { tools: Tool[] }).tools;
      expect(tools.find((t) => t.name === 'get_deployment')!._meta).toEqual({ ui: { resourceUri: 'ui://berth/deployment.html' }, 'ui/resourceUri': 'ui://berth/deployment.html' });
      expect(tools.find((t) => t.name === 'follow_view')!._meta).toEqual({ ui: { visibility: ['app'] } });
      const resources = ((await c.listResources()) as { resources: Array<{ uri: string; mimeType?: string }> }).resources;
      expect(resources.filter((r) => r.uri.startsWith('ui://')).map((r) => r.mimeType)).toEqual(VIEWS.map(() => VIEW_MIME));
      const read = (await c.readResource({ uri: VIEWS[3]!.uri })) as { contents: Array<{ text?: string; mimeType?: string }> };
      expect(read.contents[0]!.mimeType).toBe(VIEW_MIME);

      const follow = (args: Record<string, unknown>) =>
        (c as Client).callTool({ name: 'follow_view', arguments: args }) as Promise<{ structuredContent?: { version: string; data: { items?: Array<{ uuid: string; name: string }> } } }>;
      const first = await follow({ view: 'board' });
      const waiting = follow({ view: 'board', since: first.structuredContent!.version });
      await new Promise((r) => setTimeout(r, 300));
      const name = `stdio ${kind} ${Date.now()}`;
      expect((await call(s.url, 'PATCH', `/api/v1/applications/${w.appUuid}`, { token: s.rootToken, body: { name } })).status).toBe(200);
      const next = await waiting;
      expect(next.structuredContent!.data.items!.find((i) => i.uuid === w.appUuid)!.name).toBe(name);
    } finally {
      await c.close();
    }
  });
});
