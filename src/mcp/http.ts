import { createMcpHandler, isLegacyRequest, type AuthInfo } from '@modelcontextprotocol/server';
import { toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Caller, RequestAccess } from '../core/caller.js';
import { BerthError, validationError } from '../errors.js';
import type { Core } from '../core/gate.js';
import { accessOf } from '../http-common/access.js';
import { BadBody } from '../http-common/body.js';
import { rateHeaders } from '../limits/rate-limits.js';
import { visibleTools, type ToolDefinition } from './tools/registry.js';
import { fastCallOf, writeFastAnswer } from './fast-call.js';
import { buildMcpServer, catalogueFor, fastToolCall, type ToolCatalogue } from './server.js';
import { paramsProblem, tooDeepAnswer } from './message-guard.js';
import type { OAuthServer } from '../auth/oauth/server.js';
import { satisfies } from '../auth/permissions.js';
import { allowedHosts, hostAllowed } from '../http-common/allowed-hosts.js';
import { ListenBus, MAX_STREAMS_PER_TOKEN } from './resources/listen.js';
import { listenRefusal, listenUris } from './resources/listen-check.js';
import { McpTaskRunner } from './tasks/runner.js';
import { LiveSubscriptions } from './resources/live.js';
import { LegacySessions } from './http-sessions.js';

interface McpRouteOptions {
  core: Core;
  tools: readonly ToolDefinition[];
  config: Config;
  logger: Logger;
  oauth?: OAuthServer;
}

/** What one /mcp request carries into the server factory (through the SDK's authInfo.extra). */
type RequestState = {
  caller: Caller;
  catalogue: ToolCatalogue;
  readOnly: boolean;
};

/** A JSON-RPC error answered by the route itself (the SDK never sees the request). */
const rpcError = (code: number, message: string) => ({ jsonrpc: '2.0', id: null, error: { code, message } });

/**
 * The operation a request runs, when it is a tools/call (by its tool, or through call_operation),
 * so that the operation's own limit is charged as REST charges it.
 */
function operationOf(body: unknown, byName: ReadonlyMap<string, ToolDefinition>): ToolDefinition | undefined {
  const b = body as { method?: unknown; params?: { name?: unknown; arguments?: { name?: unknown } } } | null | undefined;
  if (!b || typeof b !== 'object' || Array.isArray(b) || b.method !== 'tools/call') return undefined;
  const name = b.params?.name === 'call_operation' ? b.params.arguments?.name : b.params?.name;
  return typeof name === 'string' ? byName.get(name) : undefined;
}

/**
 * Call options whose signal, aborted when the client goes away before its answer (as the SDK's
 * request signal is), is made only when an operation reads it: an AbortController and a close
 * listener per call cost more than some whole operations, and few operations read it.
 */
function lazyAbortOptions(res: ServerResponse): { readonly signal: AbortSignal } {
  let signal: AbortSignal | undefined;
  return {
    get signal() {
      if (!signal) {
        const ac = new AbortController();
        signal = ac.signal;
        // Not once the answer is written (abort() makes a DOMException with a stack: not free).
        if ((res.destroyed || res.socket?.destroyed === true) && !res.writableEnded) ac.abort();
        else res.once('close', () => !res.writableEnded && ac.abort());
      }
      return signal;
    },
  };
}

/** A JSON-RPC initialize request (the 2025 era's first message, which opens a session). */
const isInitialize = (body: unknown): boolean => Boolean(body) && typeof body === 'object' && !Array.isArray(body) && (body as { method?: unknown }).method === 'initialize';

/** A boolean header: exactly true or false (absent is false); anything else is refused, never guessed. */
function booleanHeader(req: FastifyRequest, name: string): boolean {
  const v = req.headers[name];
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw validationError({ [name]: ['Must be true or false.'] });
}

/**
 * Transport guards the SDK leaves to us: browser origins (none allowed unless configured) and,
 * when bound to loopback or given MCP_ALLOWED_HOSTS, the Host header (DNS rebinding).
 */
function guard(req: FastifyRequest, config: Config): void {
  const origin = req.headers.origin;
  if (origin !== undefined && !config.mcpAllowedOrigins.includes(origin)) throw new BerthError('origin_not_allowed');
  const hosts = allowedHosts(config);
  if (hosts && !hostAllowed(hosts, req.headers.host ?? '')) throw new BerthError('host_not_allowed');
}

function headerOrQuery(req: FastifyRequest): string | undefined {
  const h = req.headers['x-berth-toolsets'];
  if (typeof h === 'string' && h.trim()) return h;
  const q = (req.query as Record<string, unknown> | undefined)?.toolsets;
  return typeof q === 'string' ? q : undefined;
}

/**
 * The catalogue of one token shape (permissions, root team, read-only, toolset selection): what
 * visibleTools and catalogueFor work out is the same for every request of that shape, so it is
 * worked out once. Stateless HTTP never changes a catalogue (no enable_toolsets), so sharing is
 * safe; the shape is read from the request's freshly admitted caller, so a role change or a
 * revoked permission picks another entry at the next request.
 */
function catalogueCache(tools: readonly ToolDefinition[]) {
  const cache = new Map<string, ToolCatalogue>();
  return (caller: Caller, readOnly: boolean, spec: string | undefined): ToolCatalogue => {
    const key = `${[...caller.permissions].sort().join(',')}|${caller.rootTeam}|${readOnly}|${spec ?? ''}`;
    let c = cache.get(key);
    if (!c) {
      c = catalogueFor(visibleTools(tools, caller, { readOnly }), spec, false);
      // A bound, not an LRU: shapes are few (permission sets × headers); a flood of odd
      // ?toolsets= values only costs rebuilding.
      if (cache.size >= 256) cache.clear();
      cache.set(key, c);
    }
    return c;
  };
}

/**
 * /mcp: streamable HTTP. Each request is authenticated and checked like any API request. POSTs
 * are served statelessly by a fresh MCP server holding only the tools this caller may see, except
 * a 2025-era client's once it initialized: those, and its GET and DELETE, go to its session
 * (http-sessions.ts), which can push.
 */
export function registerMcpRoute(app: FastifyInstance, opts: McpRouteOptions): void {
  const { core, tools, config, logger } = opts;
  // 2026-era subscriptions/listen streams hear berth's change feed, each only its team's (listen.ts).
  const feed = core.deps.changes;
  const bus = feed && new ListenBus(feed);
  // One task runner per process: each request's server is fresh, a task outlives it.
  const runner = new McpTaskRunner(core, { leaseMs: config.jobLeaseMs, ttlMs: config.mcpTaskTtlMs, maxTtlMs: config.mcpTaskMaxTtlMs }, logger);
  runner.start();
  app.addHook('onClose', () => runner.stop());
  const handler = createMcpHandler(
    (ctx) => {
      const state = ctx.authInfo?.extra as RequestState | undefined;
      if (!state) throw new Error('MCP request reached the server factory without an admitted caller');
      // Sessionless 2025 HTTP cannot push (no GET stream): subscribe is advertised to the 2026 era only.
      const resources = { core, caller: async () => state.caller, era: ctx.era, advertise: Boolean(bus) && ctx.era === 'modern' };
      const callerFor = async () => state.caller;
      return buildMcpServer({
        core,
        logger,
        catalogue: state.catalogue,
        all: tools,
        readOnly: state.readOnly,
        callerFor,
        resources,
        tasks: { runner, owner: callerFor },
      });
    },
    { onerror: (err) => logger.debug({ err: err.message }, 'mcp request rejected'), ...(bus ? { bus, maxSubscriptions: 10_000 } : {}) },
  );
  app.addHook('onClose', async () => {
    bus?.closeAll();
    await handler.close();
  });
  // 2025-era sessions: one server for the session's life, which pushes what changes on the
  // client's GET stream; its caller is read per request (admitted as every request is).
  const sessions = new LegacySessions({ idleMs: config.mcpSessionIdleMs, logger });
  // Open GET streams would hold up the server's close.
  app.addHook('preClose', () => sessions.closeAll());
  const sessionServer = (callerNow: () => Caller, first: Caller, catalogue: ToolCatalogue, readOnly: boolean) => {
    const callerFor = async () => callerNow();
    const live = feed && { feed, teamId: first.teamId, subscriptions: new LiveSubscriptions() };
    const resources = { core, caller: callerFor, era: 'legacy' as const, advertise: Boolean(live), ...(live ? { live } : {}) };
    return buildMcpServer({ core, logger, catalogue, all: tools, readOnly, callerFor, resources, tasks: { runner, owner: callerFor, notifies: true } });
  };
  const serve = toNodeHandler(handler);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const catalogueOf = catalogueCache(tools);

  /** What every /mcp request goes through first: the transport guards, admission, OAuth step-up. */
  async function admitted(req: FastifyRequest): Promise<{ access: RequestAccess; caller: Caller }> {
    guard(req, config);
    const access = accessOf(req);
    access.mcp = true;
    // An operation with a limit of its own (feedback) is charged to it, as on REST; anything
    // else is one unit of the general bucket per request.
    const called = operationOf(req.body, byName);
    const limited = called?.op.rateLimit;
    // An OAuth protected resource (MCP authorization spec): OAuth access tokens bound to /mcp are
    // accepted beside API tokens, and refusals say where to get one (RFC 9728).
    const oauth = opts.oauth?.ready ? opts.oauth : undefined;
    if (oauth) access.oauthResource = oauth.resource;
    let caller: Caller;
    try {
      caller = await core.admit(access, limited ? { rateLimit: limited } : undefined);
    } catch (err) {
      if (oauth && err instanceof BerthError && (err.kind === 'unauthenticated' || err.kind === 'invalid_token')) err.details.resourceMetadata = oauth.resourceMetadataUrl;
      throw err;
    }
    // An OAuth client whose token lacks the tool's permission gets the spec's 403 insufficient_scope,
    // naming the scope, so it can ask the person for more (step-up); API tokens keep the tool error.
    const needed = called?.op.permission;
    if (oauth && caller.oauth && needed && needed !== 'authenticated' && !satisfies(caller.permissions, needed)) {
      throw new BerthError('missing_permissions', { missingPermissions: [needed], insufficientScope: true, resourceMetadata: oauth.resourceMetadataUrl });
    }
    return { access, caller };
  }

  /** The SDK writes the response itself, past Fastify's hooks: the rate headers are set on it first. */
  const takeOver = (reply: FastifyReply, access: RequestAccess) => {
    if (access.rate) for (const [k, v] of Object.entries(rateHeaders(access.rate))) reply.raw.setHeader(k, v);
    reply.hijack();
  };

  app.post('/mcp', async (req, reply) => {
    const { access, caller } = await admitted(req);
    // One request, one charge: a JSON-RPC batch would run many calls for one. The MCP revisions
    // served here have no batching (2025-06-18 removed it), so a batch is refused unread.
    if (Array.isArray(req.body)) {
      return reply.code(400).send(rpcError(-32600, 'Invalid Request: JSON-RPC batches are not supported; send one request per POST.'));
    }
    // The header can only narrow what the token allows, never widen it.
    const readOnly = booleanHeader(req, 'x-berth-read-only');
    // Which tools are listed: the X-Berth-Toolsets header or ?toolsets= (a client configured
    // with a URL only); the default set otherwise. Stateless, so the list cannot grow mid-session:
    // call_operation reaches the rest.
    const spec = headerOrQuery(req);
    let catalogue: ToolCatalogue;
    try {
      catalogue = catalogueOf(caller, readOnly, spec);
    } catch (err) {
      throw validationError({ toolsets: [(err as Error).message] });
    }
    if (req.body instanceof BadBody) return reply.code(400).send(rpcError(-32700, `Parse error: ${req.body.reason}`));
    // One walk of the params: nested too deep is refused here; any other problem (a prototype
    // key) leaves the call to the SDK path, whose guard answers it.
    const problem = paramsProblem(req.body);
    const tooDeep = tooDeepAnswer(req.body, problem);
    if (tooDeep) return reply.code(400).send(tooDeep);
    // A plain tools/call is answered without the SDK's per-request server, byte for byte as it
    // would answer (fast-call.ts); anything else, or a call it would refuse, goes to the SDK.
    const fast = config.mcpFastCalls && !problem ? fastCallOf(req.headers, req.body) : undefined;
    const answer = fast && fastToolCall({ core, logger, catalogue, all: tools, readOnly, callerFor: async () => caller }, fast.name, fast.args, lazyAbortOptions(reply.raw), fast.elicits);
    if (fast && answer) {
      const { result, raw } = await answer;
      reply.hijack();
      writeFastAnswer(reply.raw, fast, result, raw, access.rate ? rateHeaders(access.rate) : undefined);
      return;
    }
    // A 2025-era client that initializes gets a session (http-sessions.ts), and its requests go
    // to it; 2026-era requests and sessionless 2025 ones stay on the stateless handler below.
    const sessionId = req.headers['mcp-session-id'];
    const opens = sessionId === undefined && isInitialize(req.body);
    const held = typeof sessionId === 'string' && sessions.where(sessionId, caller) !== 'elsewhere';
    if ((held || opens) && (await isLegacyRequest(await toWebRequest(req.raw, req.body), req.body))) {
      const auth: AuthInfo = { token: `berth-token-${caller.tokenId}`, clientId: String(caller.userId), scopes: [...caller.permissions] };
      (req.raw as typeof req.raw & { auth?: AuthInfo }).auth = auth;
      takeOver(reply, access);
      const r = { caller, recheck: () => core.identify(access), req: req.raw, res: reply.raw, body: req.body };
      if (typeof sessionId === 'string') return sessions.handle(sessionId, r);
      return sessions.open(r, (callerNow) => sessionServer(callerNow, caller, catalogue, readOnly));
    }
    const state: RequestState = { caller, catalogue, readOnly };
    const auth: AuthInfo = { token: `berth-token-${caller.tokenId}`, clientId: String(caller.userId), scopes: [...caller.permissions], extra: state };
    (req.raw as typeof req.raw & { auth?: AuthInfo }).auth = auth;
    // A listen stream follows only what its token reads, and a token holds only so many streams.
    const uris = bus && listenUris(req.body);
    if (bus && uris) {
      const refusal = await listenRefusal(core, caller, req.body);
      if (refusal) return reply.code(200).send(refusal);
      if (bus.streamsOf(caller.tokenId) >= MAX_STREAMS_PER_TOKEN)
        return reply.code(200).send({ jsonrpc: '2.0', id: (req.body as { id?: unknown }).id ?? null, error: { code: -32603, message: 'Subscription limit reached' } });
    }
    takeOver(reply, access);
    if (bus && uris) {
      const stream = { teamId: caller.teamId, tokenId: caller.tokenId, uris, recheck: () => core.identify(access), end: () => reply.raw.destroy() };
      await bus.serving(stream, () => serve(req.raw, reply.raw, req.body));
      return;
    }
    await serve(req.raw, reply.raw, req.body);
  });

  // GET (the client's stream for what the server pushes) and DELETE (the end) of a 2025 session.
  // Without a session id they stay what they were: 405, the stateless door has neither.
  const sessionRequest = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = req.headers['mcp-session-id'];
    const notAllowed = () => new BerthError('method_not_allowed', { allow: ['POST'] });
    if (typeof id !== 'string') {
      await core.chargeAddress(accessOf(req));
      throw notAllowed();
    }
    const { access, caller } = await admitted(req);
    // Another instance's session (for this token): this instance has no stream for it, as stateless.
    if (sessions.where(id, caller) === 'elsewhere') throw notAllowed();
    takeOver(reply, access);
    await sessions.handle(id, { caller, recheck: () => core.identify(access), req: req.raw, res: reply.raw, body: undefined });
  };
  app.get('/mcp', sessionRequest);
  app.delete('/mcp', sessionRequest);
}
