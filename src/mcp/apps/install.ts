import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, type CallToolResult, type ClientCapabilities, type ReadResourceResult, type Resource, type Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Caller } from '../../core/caller.js';
import type { Core } from '../../core/gate.js';
import { BerthError, toWire, validationError } from '../../errors.js';
import { issuesToErrors } from '../../core/validation.js';
import { FOLLOW_TOOL, follow, followInput, followOutput } from './follow.js';
import { viewHtml } from './html.js';
import { declaresUi, LEGACY_URI_KEY, UI_EXTENSION, VIEW_BY_TOOL, VIEW_BY_URI, VIEW_MIME, VIEWS } from './views.js';

/** What the apps need of a session: the core, its caller, and the connection's declared capabilities (2025 era). */
export interface AppsSession {
  core: Core;
  callerFor(): Promise<Caller>;
  /** What the client declared at initialize (stdio, a 2025 HTTP session): undefined before, or statelessly. */
  clientCapabilities(): ClientCapabilities | undefined;
}

/** The part of a request the declaration is read from: a 2026-era request's envelope. */
export type Envelope = Record<string, unknown> | undefined;

/** The capability berth declares beside its others (it serves views, as it says it runs tasks). */
export const APPS_CAPABILITIES = { extensions: { [UI_EXTENSION]: {} } };

/**
 * The views' CSP: nothing beyond the document itself (no connect, resource or frame domains):
 * everything a view shows comes through the host bridge.
 */
const CSP = { connectDomains: [], resourceDomains: [] };

/** The follow tool as tools/list shows it to a client with the extension: for the view, not the model. */
const followListing = (): Tool => ({
  name: FOLLOW_TOOL,
  title: 'Follow a view',
  description: 'Used by berth views to show an object and follow its changes; waits for a change when since is given.',
  inputSchema: objectSchema(z.toJSONSchema(followInput)),
  outputSchema: objectSchema(z.toJSONSchema(followOutput)),
  annotations: { readOnlyHint: true, openWorldHint: false },
  _meta: { ui: { visibility: ['app'] } },
});

/** A zod object's JSON Schema as a tool's (its root is an object: the type says so, checked). */
function objectSchema(json: Record<string, unknown>): Tool['inputSchema'] {
  if (json.type !== 'object') throw new Error('A tool schema describes an object');
  return json as Tool['inputSchema'];
}

const viewResource = (v: (typeof VIEWS)[number]): Resource => ({ uri: v.uri, name: `${v.name}-view`, title: v.title, description: v.description, mimeType: VIEW_MIME, _meta: { ui: { csp: CSP } } });

/**
 * The views (MCP Apps), offered to a client that declares the extension and to no other: the
 * tool session (tool-session.ts) links the tools that show a view in tools/list
 * (`_meta.ui.resourceUri`, and the legacy key), lists the follow tool and calls it; the
 * resources (resources/index.ts) list and read the ui:// documents. A client without the
 * extension gets what it would without them. The declaration is read per request: a 2026-era
 * request carries it in its envelope, a 2025 connection said it at initialize.
 */
export class Apps {
  constructor(private readonly session: AppsSession) {}

  declared(envelope: Envelope): boolean {
    if (envelope?.[PROTOCOL_VERSION_META_KEY] !== undefined) return declaresUi(envelope[CLIENT_CAPABILITIES_META_KEY]);
    return declaresUi(this.session.clientCapabilities());
  }

  /** tools/list for a client with the extension: the view links, and the follow tool last. */
  listed(tools: Tool[]): Tool[] {
    const linked = tools.map((t) => {
      const view = VIEW_BY_TOOL.get(t.name);
      if (!view) return t;
      const meta = t._meta ?? {};
      return { ...t, _meta: { ...meta, ui: { ...(meta.ui as object | undefined), resourceUri: view.uri }, [LEGACY_URI_KEY]: view.uri } };
    });
    return [...linked, followListing()];
  }

  /** The follow tool's call (the view's own, not the model's). */
  async follow(args: unknown, signal: AbortSignal | undefined): Promise<CallToolResult> {
    const parsed = followInput.safeParse(args ?? {});
    if (!parsed.success) return toolError(validationError(issuesToErrors(parsed.error.issues)));
    try {
      const out = await follow(this.session.core, () => this.session.callerFor(), parsed.data, signal);
      return { content: [{ type: 'text', text: `${out.view} ${out.version}` }], structuredContent: out };
    } catch (err) {
      if (err instanceof BerthError) return toolError(err);
      throw err;
    }
  }

  /** The views, leading the first page of resources/list. */
  resources(): Resource[] {
    return VIEWS.map(viewResource);
  }

  /** A view's document, or undefined for any other URI. */
  read(uri: string): ReadResourceResult | undefined {
    const view = VIEW_BY_URI.get(uri);
    return view && { contents: [{ uri: view.uri, mimeType: VIEW_MIME, text: viewHtml(view.name, view.title), _meta: { ui: { csp: CSP } } }] };
  }
}

function toolError(err: BerthError): CallToolResult {
  // The REST door's body, as every berth tool error says it.
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(toWire(err).body) }] };
}
