import { ProtocolError } from '@modelcontextprotocol/server';
import type { Caller } from '../../core/caller.js';
import type { Core } from '../../core/gate.js';
import { readDocument } from './read.js';

/** Most URIs one subscriptions/listen may name (each is read once to authorize it). */
export const MAX_LISTEN_URIS = 100;

type Message = { id?: unknown; method?: unknown; params?: { notifications?: { resourceSubscriptions?: unknown } } };

/** The URIs a subscriptions/listen request asks to follow ([] for none), or undefined when it is no listen request. */
export function listenUris(message: unknown): string[] | undefined {
  const m = message as Message | null;
  if (!m || typeof m !== 'object' || m.method !== 'subscriptions/listen') return undefined;
  const uris = m.params?.notifications?.resourceSubscriptions;
  return Array.isArray(uris) ? uris.filter((u): u is string => typeof u === 'string') : [];
}

/**
 * The SDK's listen routers honour any URI a client names; berth first reads each one under the
 * caller's permissions and team, so a stream never follows what its token cannot read. The
 * JSON-RPC error to answer (not found with data.uri, invalid params, too many), or undefined.
 */
export async function listenRefusal(core: Core, caller: Caller, message: unknown): Promise<Record<string, unknown> | undefined> {
  const uris = listenUris(message) ?? [];
  const id = (message as Message).id ?? null;
  if (uris.length > MAX_LISTEN_URIS) return { jsonrpc: '2.0', id, error: { code: -32602, message: `Invalid params: at most ${MAX_LISTEN_URIS} resourceSubscriptions per listen` } };
  for (const uri of new Set(uris)) {
    try {
      await readDocument(core, caller, uri);
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      return { jsonrpc: '2.0', id, error: { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) } };
    }
  }
  return undefined;
}
