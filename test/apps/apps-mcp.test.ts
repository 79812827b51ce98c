/**
 * MCP Apps (issue 44) with real SDK clients over HTTP: a client that declares the
 * io.modelcontextprotocol/ui extension gets the views (tools linked by _meta.ui.resourceUri and
 * the legacy key, the app-only follow tool, the ui:// documents); a client that does not sees
 * exactly what it saw before. Both eras; stdio is in apps-stdio.test.ts.
 */
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { buildWorld, type World } from '../helpers/world.js';
import { UI_EXTENSION, VIEW_MIME, VIEWS } from '../../src/mcp/apps/views.js';

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0 } as never);
  w = await buildWorld(s);
}, 120_000);
afterAll(() => s.stop());

const UI_CAPABILITIES = { extensions: { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME] } } };
type Kind = 'v2-modern' | 'v2-legacy' | 'v1';
type Any = Client | V1Client;

async function connect(kind: Kind, ui: boolean): Promise<Any> {
  const url = new URL('/mcp', s.url);
  const opts = { requestInit: { headers: { Authorization: `Bearer ${s.rootToken}`, 'X-Berth-Toolsets': 'all' } } };
  if (kind === 'v1') {
    const c = new V1Client({ name: 't', version: '1' }, ui ? { capabilities: UI_CAPABILITIES as never } : undefined);
    await c.connect(new V1HttpTransport(url, opts));
    return c;
  }
  const c = new Client({ name: 't', version: '1' }, { versionNegotiation: { mode: kind === 'v2-modern' ? 'auto' : 'legacy' }, ...(ui ? { capabilities: UI_CAPABILITIES as never } : {}) });
  await c.connect(new StreamableHTTPClientTransport(url, opts));
  return c;
}

type Tool = { name: string; _meta?: Record<string, unknown> };
const listTools = async (c: Any) => ((await c.listTools()) as { tools: Tool[] }).tools;
const listResources = async (c: Any) => ((await c.listResources()) as { resources: Array<{ uri: string; mimeType?: string }> }).resources;
const callFollow = (c: Any, args: Record<string, unknown>) =>
  (c as Client).callTool({ name: 'follow_view', arguments: args }) as Promise<{ isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ text?: string }> }>;

describe.each<Kind>(['v2-modern', 'v2-legacy', 'v1'])('MCP Apps over HTTP, %s client', (kind) => {
  it('a client without the extension sees no view, no app tool, no ui:// resource', async () => {
    const c = await connect(kind, false);
    try {
      const tools = await listTools(c);
      expect(tools.length).toBeGreaterThan(50);
      expect(tools.filter((t) => t._meta !== undefined).map((t) => t.name)).toEqual([]);
      expect(tools.some((t) => t.name === 'follow_view')).toBe(false);
      expect((await listResources(c)).filter((r) => r.uri.startsWith('ui://'))).toEqual([]);
      await expect(c.readResource({ uri: VIEWS[0]!.uri })).rejects.toThrow(/not found/i);
      // The app tool is unknown to it, as any name berth does not serve.
      await expect(callFollow(c, { view: 'board' })).rejects.toThrow(/Tool follow_view not found/);
    } finally {
      await c.close();
    }
  });

  it('a client with it gets the linked tools, the app-only follow tool and the four views', async () => {
    const c = await connect(kind, true);
    try {
      expect((c.getServerCapabilities() as { extensions?: Record<string, unknown> }).extensions?.[UI_EXTENSION]).toEqual({});
      const tools = await listTools(c);
      for (const v of VIEWS) {
        for (const name of v.tools) {
          const t = tools.find((x) => x.name === name)!;
          expect(t._meta, name).toEqual({ ui: { resourceUri: v.uri }, 'ui/resourceUri': v.uri });
        }
      }
      const follow = tools.find((t) => t.name === 'follow_view')!;
      expect(follow._meta).toEqual({ ui: { visibility: ['app'] } });
      // Everything else is as it was.
      expect(tools.filter((t) => t._meta !== undefined).length).toBe(VIEWS.flatMap((v) => v.tools).length + 1);

      const views = (await listResources(c)).filter((r) => r.uri.startsWith('ui://'));
      expect(views.map((r) => r.uri).sort()).toEqual(VIEWS.map((v) => v.uri).sort());
      for (const v of VIEWS) {
        const read = (await c.readResource({ uri: v.uri })) as { contents: Array<{ mimeType?: string; text?: string; _meta?: Record<string, unknown> }> };
        const doc = read.contents[0]!;
        expect(doc.mimeType).toBe(VIEW_MIME);
        expect(doc._meta).toEqual({ ui: { csp: { connectDomains: [], resourceDomains: [] } } });
        expect(doc.text).toMatch(/^<!doctype html>/);
        // Self-contained: nothing loaded from anywhere, and small.
        expect(doc.text).not.toMatch(/<script[^>]+src=|<link[^>]+href=|@import|url\(/i);
        expect(Buffer.byteLength(doc.text!)).toBeLessThan(150 * 1024);
        expect(doc.text).not.toMatch(/innerHTML|insertAdjacentHTML|document\.write/);
      }
    } finally {
      await c.close();
    }
  });

  it('follow_view answers the view’s data at once, waits for a change with since, and keeps to the team', async () => {
    const c = await connect(kind, true);
    try {
      const board = await callFollow(c, { view: 'board' });
      const items = (board.structuredContent!.data as { items: Array<{ uuid: string; name: string }> }).items;
      expect(items.map((i) => i.uuid)).toContain(w.appUuid);
      const dep = await callFollow(c, { view: 'deployment', uuid: w.deploymentUuid });
      expect((dep.structuredContent!.data as { deployment_uuid: string }).deployment_uuid).toBe(w.deploymentUuid);
      const approval = await callFollow(c, { view: 'approval', uuid: w.approvalUuid });
      expect((approval.structuredContent!.data as { approve_url: string }).approve_url).toMatch(new RegExp(`/approvals/${w.approvalUuid}$`));

      // Unchanged: the answer waits; a rename through REST ends the wait with the new data.
      const since = board.structuredContent!.version as string;
      const started = Date.now();
      const waiting = callFollow(c, { view: 'board', since });
      await new Promise((r) => setTimeout(r, 300));
      const name = `renamed-${kind}`;
      expect((await call(s.url, 'PATCH', `/api/v1/applications/${w.appUuid}`, { token: s.rootToken, body: { name } })).status).toBe(200);
      const next = await waiting;
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(next.structuredContent!.version).not.toBe(since);
      expect((next.structuredContent!.data as { items: Array<{ uuid: string; name: string }> }).items.find((i) => i.uuid === w.appUuid)!.name).toBe(name);

      // Another team's approval is the core's 404; a bad input the contract's 422.
      const other = await s.team(`Other ${kind}`);
      const foreign = await buildWorld(s, other.rootToken, `o${kind.replace(/-/g, '')}`);
      const refused = await callFollow(c, { view: 'approval', uuid: foreign.approvalUuid });
      expect(refused.isError).toBe(true);
      expect(JSON.parse(refused.content[0]!.text!)).toEqual({ message: 'Resource not found.' });
      const invalid = await callFollow(c, { view: 'nope' });
      expect(invalid.isError).toBe(true);
      expect(JSON.parse(invalid.content[0]!.text!).message).toBe('Validation error.');
    } finally {
      await c.close();
    }
  });
});
