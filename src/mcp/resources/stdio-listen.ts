import type { Caller } from '../../core/caller.js';
import type { Core } from '../../core/gate.js';
import type { StdioPreCheck } from '../message-guard.js';
import { listenRefusal, listenUris } from './listen-check.js';
import { LiveSubscriptions } from './live.js';

type Message = Record<string, unknown>;

/**
 * stdio's subscriptions/listen, checked before the SDK's entry serves it: every URI read under
 * the token (not found / invalid otherwise), the connection's total bounded, and the listen's
 * URIs recorded so the connection's server says their changes (the entry then stamps them onto
 * the listen). A cancel forgets them.
 */
export function stdioListenCheck(core: Core, caller: () => Promise<Caller>, subs: LiveSubscriptions): StdioPreCheck {
  return {
    claims: (m) => m.method === 'subscriptions/listen' || m.method === 'notifications/cancelled',
    async check(m: Message) {
      if (m.method === 'notifications/cancelled') {
        const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
        if (typeof id === 'string' || typeof id === 'number') subs.listens.delete(id);
        return undefined;
      }
      const refusal = await listenRefusal(core, await caller(), m);
      if (refusal) return refusal;
      const uris = listenUris(m) ?? [];
      if (subs.size + uris.length > LiveSubscriptions.MAX_URIS) return { jsonrpc: '2.0', id: m.id ?? null, error: { code: -32603, message: 'Subscription limit reached' } };
      if (uris.length && (typeof m.id === 'string' || typeof m.id === 'number')) subs.listens.set(m.id, uris);
      return undefined;
    },
  };
}
