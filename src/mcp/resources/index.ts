import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import type { Apps } from '../apps/install.js';
import type { Caller } from '../../core/caller.js';
import type { ChangeFeed } from '../../core/changes.js';
import type { Core } from '../../core/gate.js';
import { RESOURCE_KINDS, templateOf } from './kinds.js';
import { listPage } from './list.js';
import { readDocument, readResource } from './read.js';
import { LiveSubscriptions } from './live.js';

/**
 * How a session serves berth:// resources. Reads and lists are the same everywhere; what is
 * pushed depends on the connection:
 * - `live`: a connection that outlives a request (stdio, a 2025 HTTP session): resources/subscribe (2025 era) and
 *   list_changed are sent on it, and 2026 listens are routed by the SDK's stdio entry;
 * - `advertise` without `live`: the 2026 HTTP era, whose subscriptions/listen streams are
 *   served by the handler's listen router over berth's change feed (listen.ts);
 * - neither: sessionless 2025 HTTP, which has no way to push, so subscribe is not advertised.
 */
export interface ResourceSession {
  core: Core;
  /** The caller of one resource request (stdio admits each request anew, as for tools). */
  caller: () => Promise<Caller>;
  era: 'legacy' | 'modern';
  advertise: boolean;
  live?: { feed: ChangeFeed; teamId: number; subscriptions: LiveSubscriptions };
}

/**
 * Declares the resources capability and serves resources/* from the kinds table (kinds.ts).
 * `views`: the MCP Apps' ui:// documents, listed first and read for a client that declares the
 * extension (apps/install.ts).
 */
export function registerResources(low: Server, session: ResourceSession, views?: Apps): void {
  const pushes = session.advertise || session.live !== undefined;
  low.registerCapabilities({ resources: { subscribe: pushes, listChanged: pushes } });
  const uriParam = (request: { params: { uri: string } }) => request.params.uri;

  low.setRequestHandler('resources/templates/list', async () => ({
    resourceTemplates: RESOURCE_KINDS.map((k) => ({ uriTemplate: templateOf(k), name: k.kind, title: k.title, description: k.description, mimeType: 'application/json' })),
  }));
  low.setRequestHandler('resources/list', async (request, ctx) => {
    const cursor = request.params?.cursor;
    const page = await listPage(session.core.deps.db, await session.caller(), cursor);
    // The views lead the first page; a later page (a cursor) is berth:// resources only.
    return views?.declared(ctx.mcpReq.envelope) && cursor === undefined ? { ...page, resources: [...views.resources(), ...page.resources] } : page;
  });
  low.setRequestHandler('resources/read', async (request, ctx) => {
    const view = views?.declared(ctx.mcpReq.envelope) ? views.read(uriParam(request)) : undefined;
    return view ?? readResource(session.core, await session.caller(), uriParam(request));
  });

  const live = session.live;
  if (!live) return;
  if (session.era === 'legacy') {
    low.setRequestHandler('resources/subscribe', async (request) => {
      const uri = uriParam(request);
      // Subscribing is reading: a foreign or unknown URI is "not found", a malformed one invalid.
      await readDocument(session.core, await session.caller(), uri);
      if (!live.subscriptions.subscribed.has(uri) && live.subscriptions.size >= LiveSubscriptions.MAX_URIS) throw new ProtocolError(ProtocolErrorCode.InternalError, 'Subscription limit reached');
      live.subscriptions.subscribed.add(uri);
      return {};
    });
    low.setRequestHandler('resources/unsubscribe', async (request) => {
      live.subscriptions.subscribed.delete(uriParam(request));
      return {};
    });
  }
  const stop = live.subscriptions.follow(live.feed, live.teamId, {
    updated: (uri) => void low.sendResourceUpdated({ uri }).catch(() => undefined),
    listChanged: () => void low.sendResourceListChanged().catch(() => undefined),
  });
  // Nothing is left behind by a connection (or a discarded stdio probe instance) that ends.
  const previous = low.onclose;
  low.onclose = () => {
    stop();
    previous?.();
  };
}
