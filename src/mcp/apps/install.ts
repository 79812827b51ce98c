import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, type McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Caller } from '../../core/caller.js';
import type { Core } from '../../core/gate.js';
import { BerthError, toWire, validationError } from '../../errors.js';
import { issuesToErrors } from '../../core/validation.js';
import { FOLLOW_TOOL, follow, followInput, followOutput } from './follow.js';
import { viewHtml } from './html.js';
import { declaresUi, LEGACY_URI_KEY, UI_EXTENSION, VIEW_BY_TOOL, VIEW_BY_URI, VIEW_MIME, VIEWS } from './views.js';

/** What the apps need of a session: the core, its caller, and (2025 HTTP) the declaration its request carried. */
export interface AppsSession {
  core: Core;
  callerFor(): Promise<Caller>;
}

type Ctx = { mcpReq?: { envelope?: Record<string, unknown>; signal?: AbortSignal } } | undefined;
type Handler = (request: { params?: Record<string, unknown> }, ctx: Ctx) => Promise<unknown>;
interface RequestTable {
  _requestHandlers: Map<string, Handler>;
}

/**
 * The views' CSP: nothing beyond the document itself (no connect, resource or frame domains):
 * everything a view shows comes through the host bridge.
 */
const CSP = { connectDomains: [], resourceDomains: [] };

/** The follow tool as tools/list shows it to a client with the extension: for the view, not the model. */
const followListing = () => ({
  name: FOLLOW_TOOL,
  title: 'Follow a view',
  description: 'Used by berth views to show an object and follow its changes; waits for a change when since is given.',
  inputSchema: z.toJSONSchema(followInput),
  outputSchema: z.toJSONSchema(followOutput),
  annotations: { readOnlyHint: true, openWorldHint: false },
  _meta: { ui: { visibility: ['app'] } },
});

const viewResource = (v: (typeof VIEWS)[number]) => ({ uri: v.uri, name: `${v.name}-view`, title: v.title, description: v.description, mimeType: VIEW_MIME, _meta: { ui: { csp: CSP } } });

/**
 * Offers the views to a client that declares the extension, and to no other: tools/list links
 * the tools that show a view (`_meta.ui.resourceUri`, and the legacy key) and adds the follow
 * tool; resources/list and resources/read add the ui:// documents; tools/call serves the follow
 * tool. A client without the extension gets the SDK's answers untouched. The declaration is read
 * per request: a 2026-era request carries it in its envelope, a 2025 stdio connection said it at
 * initialize, a 2025 HTTP session's likewise (its one server, http-sessions.ts).
 */
export function installApps(server: McpServer, session: AppsSession): void {
  const table = server.server as unknown as RequestTable;
  // Both sides declare an extension before either uses it: berth says it serves views (as it
  // says it runs tasks); what it offers still waits for the client's own declaration.
  server.server.registerCapabilities({ extensions: { [UI_EXTENSION]: {} } } as never);
  const declared = (ctx: Ctx): boolean => {
    const envelope = ctx?.mcpReq?.envelope;
    if (envelope?.[PROTOCOL_VERSION_META_KEY] !== undefined) return declaresUi(envelope[CLIENT_CAPABILITIES_META_KEY]);
    return declaresUi(server.server.getClientCapabilities());
  };
  /** The SDK's handler of a method, answering as it did unless the request's client declared the extension. */
  const wrap = (method: string, wrapper: (sdk: Handler, request: { params?: Record<string, unknown> }, ctx: Ctx) => Promise<unknown>) => {
    const sdk = table._requestHandlers.get(method);
    if (sdk) table._requestHandlers.set(method, (request, ctx) => (declared(ctx) ? wrapper(sdk, request, ctx) : sdk(request, ctx)));
  };

  wrap('tools/list', async (sdk, request, ctx) => {
    const result = (await sdk(request, ctx)) as { tools: Array<Record<string, unknown>> };
    const tools = result.tools.map((t) => {
      const view = VIEW_BY_TOOL.get(String(t.name));
      if (!view) return t;
      const meta = (t._meta ?? {}) as Record<string, unknown>;
      return { ...t, _meta: { ...meta, ui: { ...(meta.ui as object | undefined), resourceUri: view.uri }, [LEGACY_URI_KEY]: view.uri } };
    });
    return { ...result, tools: [...tools, followListing()] };
  });
  wrap('tools/call', async (sdk, request, ctx) => {
    if (request.params?.name !== FOLLOW_TOOL) return sdk(request, ctx);
    const parsed = followInput.safeParse(request.params?.arguments ?? {});
    if (!parsed.success) return toolError(validationError(issuesToErrors(parsed.error.issues)));
    try {
      const out = await follow(session.core, () => session.callerFor(), parsed.data, ctx?.mcpReq?.signal);
      return { content: [{ type: 'text', text: `${out.view} ${out.version}` }], structuredContent: out };
    } catch (err) {
      if (err instanceof BerthError) return toolError(err);
      throw err;
    }
  });
  wrap('resources/list', async (sdk, request, ctx) => {
    const result = (await sdk(request, ctx)) as { resources: unknown[] };
    // The views lead the first page; a later page (a cursor) is berth:// resources only.
    return request.params?.cursor === undefined ? { ...result, resources: [...VIEWS.map(viewResource), ...result.resources] } : result;
  });
  wrap('resources/read', async (sdk, request, ctx) => {
    const view = VIEW_BY_URI.get(String(request.params?.uri ?? ''));
    if (!view) return sdk(request, ctx);
    return { contents: [{ uri: view.uri, mimeType: VIEW_MIME, text: viewHtml(view.name, view.title), _meta: { ui: { csp: CSP } } }] };
  });
}

function toolError(err: BerthError) {
  // The REST door's body, as every berth tool error says it.
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(toWire(err).body) }] };
}
