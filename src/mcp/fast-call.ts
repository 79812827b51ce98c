import type { ServerResponse } from 'node:http';
import {
  classifyInboundRequest,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isJsonContentType,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
} from '@modelcontextprotocol/server';
import type { IncomingHttpHeaders } from 'node:http';
import { SERVER_INFO } from './server.js';
import { TASKS_EXTENSION } from './tasks/handlers.js';

/**
 * The HTTP fast path for `tools/call` (issue 28): the SDK's stateless handler builds a server,
 * a transport and web Request/Response objects for every POST, several times what the call
 * itself costs. A plain tools/call, one whose every rung of the SDK's ladder is known to pass,
 * is answered here with the bytes the SDK would send; anything else (other methods, progress
 * tokens, other _meta keys, odd headers, unknown tools, refused arguments) goes to the SDK.
 * test/mcp/fast-call.test.ts sends the same requests down both paths and compares the answers.
 */

/** The modern revision the SDK serves (its SUPPORTED_MODERN_PROTOCOL_VERSIONS, not exported). */
const MODERN = '2026-07-28';
const LEGACY = new Set(SUPPORTED_PROTOCOL_VERSIONS);
const ENVELOPE_KEYS = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY]);

export interface FastCall {
  era: 'modern' | 'legacy';
  id: string | number;
  name: string;
  args: Record<string, unknown> | undefined;
  /** The client declared elicitation (2026 era): a call the approval policy may hold goes to the SDK, which can ask. */
  elicits: boolean;
}

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
const only = (o: Record<string, unknown>, keys: readonly string[]) => {
  for (const k in o) if (!keys.includes(k)) return false;
  return true;
};

/** The call when this POST is one the fast path answers exactly as the SDK would, else undefined. */
export function fastCallOf(headers: IncomingHttpHeaders, body: unknown): FastCall | undefined {
  if (!isPlain(body) || body.jsonrpc !== '2.0' || body.method !== 'tools/call' || !only(body, ['jsonrpc', 'id', 'method', 'params'])) return undefined;
  const id = body.id;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) return undefined;
  const params = body.params;
  if (!isPlain(params) || typeof params.name !== 'string' || !only(params, ['name', 'arguments', '_meta'])) return undefined;
  const args = params.arguments;
  if (args !== undefined && !isPlain(args)) return undefined;
  if (!isJsonContentType(headers['content-type'])) return undefined;
  const accept = headers.accept;
  if (typeof accept !== 'string' || !accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (headers['mcp-session-id'] !== undefined || headers['last-event-id'] !== undefined) return undefined;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && typeof version !== 'string') return undefined;
  const meta = params._meta;
  if (meta === undefined) {
    // 2025 era: the stateless legacy leg, which checks only the header's version.
    if (version !== undefined && !LEGACY.has(version)) return undefined;
    if (headers['mcp-method'] !== undefined || headers['mcp-name'] !== undefined) return undefined;
    return { era: 'legacy', id, name: params.name, args, elicits: false };
  }
  // 2026 era: only the envelope's own keys (a progress token asks for a stream), headers that
  // say exactly what the body says, and the SDK's own classifier agreeing.
  if (!isPlain(meta) || !only(meta, [...ENVELOPE_KEYS]) || meta[PROTOCOL_VERSION_META_KEY] !== MODERN) return undefined;
  const name = params.name;
  if (version !== MODERN || headers['mcp-method'] !== 'tools/call' || headers['mcp-name'] !== name || name.startsWith('=?')) return undefined;
  if (!envelopeAccepted(meta, () => classifyInboundRequest({ httpMethod: 'POST', protocolVersionHeader: version, mcpMethodHeader: 'tools/call', mcpNameHeader: name, body }))) return undefined;
  const capabilities = meta[CLIENT_CAPABILITIES_META_KEY];
  // A client with the tasks extension may get a task: the SDK path decides (tasks/handlers.ts).
  if (isPlain(capabilities) && isPlain(capabilities.extensions) && capabilities.extensions[TASKS_EXTENSION] !== undefined) return undefined;
  return { era: 'modern', id, name, args, elicits: isPlain(capabilities) && capabilities.elicitation !== undefined };
}

/**
 * Whether the SDK's classifier routes a request with this envelope to its modern path. With the
 * headers already equal to the body, its answer depends on the envelope alone, and a client sends
 * the same envelope with every call: the verdict is kept by the envelope's JSON (validating it
 * with the SDK's schemas was a sixth of a fast call).
 */
const verdicts = new Map<string, boolean>();
function envelopeAccepted(meta: Record<string, unknown>, classify: () => ReturnType<typeof classifyInboundRequest>): boolean {
  const key = JSON.stringify(meta);
  let ok = verdicts.get(key);
  if (ok === undefined) {
    const route = classify();
    ok = route.kind === 'modern' && route.messageKind === 'request' && route.classification.revision === MODERN;
    if (verdicts.size >= 256) verdicts.clear();
    verdicts.set(key, ok);
  }
  return ok;
}

/**
 * The tools/call result as the SDK puts it on the wire. `raw` results (the tools/call guard's)
 * skip the SDK's result codec; the others come out in its schema's key order. The modern era
 * stamps resultType and the server's identity.
 */
function wireResult(era: FastCall['era'], result: CallToolResult, raw: boolean): Record<string, unknown> {
  let out: Record<string, unknown> = raw
    ? { ...result }
    : {
        content: result.content,
        ...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}),
        ...(result.isError !== undefined ? { isError: result.isError } : {}),
      };
  if (era === 'modern') out = { ...out, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: SERVER_INFO } };
  return out;
}

/** Writes the answer the SDK would: one JSON body (2026 era) or one SSE message event (2025 era). */
export function writeFastAnswer(res: ServerResponse, call: FastCall, result: CallToolResult, raw: boolean, extraHeaders?: Record<string, string>): void {
  const json = JSON.stringify({ result: wireResult(call.era, result, raw), jsonrpc: '2.0', id: call.id });
  // One write with its length (the SDK streams the same bytes chunked), every header in one object.
  if (call.era === 'modern') {
    res.writeHead(200, { ...extraHeaders, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
  } else {
    const sse = `event: message\ndata: ${json}\n\n`;
    res.writeHead(200, {
      ...extraHeaders,
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'content-type': 'text/event-stream',
      'x-accel-buffering': 'no',
      'content-length': Buffer.byteLength(sse),
    });
    res.end(sse);
  }
}
