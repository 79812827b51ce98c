import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { WebStandardStreamableHTTPServerTransport, type Server } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Caller } from '../core/caller.js';
import { BerthError } from '../errors.js';

/** Sessions one token holds at most; opening one more ends its least recently used. */
export const MAX_SESSIONS_PER_TOKEN = 16;
/** How often the tokens of open sessions are authenticated again (a revocation ends them within this). */
export const SESSION_RECHECK_MS = 10_000;

/** What the route hands over for one admitted request of the sessionful leg. */
export interface SessionRequest {
  caller: Caller;
  /** Authenticates the request's credentials again (a revoked or expired token throws). */
  recheck(): Promise<{ teamId: number }>;
  req: IncomingMessage;
  res: ServerResponse;
  body: unknown;
}

interface Session {
  id: string | undefined;
  tokenId: number;
  teamId: number;
  server: Server;
  /** The session's transport behind Node's request and response (the body is the route's, already parsed). */
  serve: ReturnType<typeof toNodeHandler>;
  /** The last admitted caller: work outside a request (a task's run, a pushed change) reads it. */
  latest: Caller;
  recheck: () => Promise<{ teamId: number }>;
  lastSeen: number;
  /** Requests and streams of this session still open (an open GET stream is not idleness). */
  open: number;
}

/** The SDK transport's own answer to a session id it does not hold, byte for byte. */
const UNKNOWN_SESSION = JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });

/**
 * The 2025-era sessions of /mcp (streamable HTTP with Mcp-Session-Id): an initialize opens one,
 * served by one SDK server and transport for its life, so the server can push on the client's
 * GET stream (resources/updated, list_changed, tasks/status). A session belongs to the token that
 * opened it: another token naming its id is answered as an unknown session. It ends on DELETE,
 * when idle past idleMs, when its token opens a session too many, or when its token is revoked
 * or moves team. Sessions are in this process's memory: behind a load balancer a client's
 * requests must reach the instance that holds its session (changes still cross instances on the
 * change feed).
 */
export class LegacySessions {
  private readonly sessions = new Map<string, Session>();
  /** The caller of the request being served, for the session server's handlers. */
  private readonly current = new AsyncLocalStorage<Caller>();
  private timer: NodeJS.Timeout | undefined;
  private lastRecheck = Date.now();
  /**
   * This process's mark in the ids it gives (`<mark>.<token id>.<uuid>`): an id of another
   * instance, for the same token, is one this process cannot hold (see where()).
   */
  private readonly mark = randomBytes(4).toString('hex');

  constructor(
    private readonly opts: {
      idleMs: number;
      logger: Logger;
    },
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Where a session id a request names is: held here; another instance's for this same token
   * (several instances behind a balancer that does not keep a client on one: the request is
   * served statelessly, as before sessions, and pushes reach it only on its own instance); or
   * unknown (never given, ended, or another token's: the SDK's 404, one answer for all).
   */
  where(id: string, caller: Caller): 'here' | 'elsewhere' | 'unknown' {
    const [mark, tokenId] = id.split('.', 2);
    if (tokenId !== String(caller.tokenId)) return 'unknown';
    if (mark !== this.mark) return /^[0-9a-f]{8}\.\d+\.[0-9a-f-]{36}$/.test(id) ? 'elsewhere' : 'unknown';
    const session = this.sessions.get(id);
    return session && session.tokenId === caller.tokenId && session.teamId === caller.teamId ? 'here' : 'unknown';
  }

  sessionsOf(tokenId: number): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.tokenId === tokenId) n += 1;
    return n;
  }

  /**
   * An initialize: a new session, its id in the answer's Mcp-Session-Id. `build` makes its
   * server; the `caller` it is given reads the caller of the request being served.
   */
  async open(r: SessionRequest, build: (caller: () => Caller) => Server): Promise<void> {
    await this.answering(r, () => this.opening(r, build));
  }

  /** A request naming a session: served by it, or the SDK's unknown-session 404 (another token's too). */
  async handle(id: string, r: SessionRequest): Promise<void> {
    await this.answering(r, async () => {
      const session = this.sessions.get(id);
      if (!session || this.where(id, r.caller) !== 'here') {
        r.res.writeHead(404, { 'content-type': 'application/json' }).end(UNKNOWN_SESSION);
        return;
      }
      await this.serve(session, r);
    });
  }

  /** The route has handed the response over: a failure here is answered here (else the client waits for ever). */
  private async answering(r: SessionRequest, run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (err) {
      this.opts.logger.error({ err }, 'mcp session request failed');
      if (!r.res.headersSent) r.res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }));
      else r.res.destroy();
    }
  }

  private async opening(r: SessionRequest, build: (caller: () => Caller) => Server): Promise<void> {
    this.makeRoomFor(r.caller.tokenId);
    let session: Session;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => `${this.mark}.${r.caller.tokenId}.${randomUUID()}`,
      onsessioninitialized: (id) => {
        session.id = id;
        this.sessions.set(id, session);
        this.startTimer();
      },
      onsessionclosed: (id) => void this.sessions.delete(id),
    });
    const server = build(() => this.current.getStore() ?? session.latest);
    session = {
      id: undefined,
      tokenId: r.caller.tokenId,
      teamId: r.caller.teamId,
      server,
      serve: toNodeHandler({ fetch: (request, options) => transport.handleRequest(request, options) }),
      latest: r.caller,
      recheck: r.recheck,
      lastSeen: Date.now(),
      open: 0,
    };
    await server.connect(transport);
    // However it ends (DELETE, the transport's own close, ours), it is forgotten.
    const previous = server.onclose;
    server.onclose = () => {
      if (session.id !== undefined && this.sessions.get(session.id) === session) this.sessions.delete(session.id);
      previous?.();
    };
    await this.serve(session, r);
    // An initialize the transport refused (bad params) made no session: nothing stays behind.
    if (session.id === undefined) await server.close().catch(() => undefined);
  }

  private async serve(session: Session, r: SessionRequest): Promise<void> {
    session.latest = r.caller;
    session.recheck = r.recheck;
    session.open += 1;
    session.lastSeen = Date.now();
    r.res.once('close', () => {
      session.open -= 1;
      session.lastSeen = Date.now();
    });
    await this.current.run(r.caller, () => session.serve(r.req, r.res, r.body));
  }

  /** A token at its cap gives up its least recently used session for the new one. */
  private makeRoomFor(tokenId: number): void {
    const own = [...this.sessions.values()].filter((s) => s.tokenId === tokenId);
    if (own.length < MAX_SESSIONS_PER_TOKEN) return;
    own.sort((a, b) => Number(a.open > 0) - Number(b.open > 0) || a.lastSeen - b.lastSeen);
    this.end(own[0]!);
  }

  private end(session: Session): void {
    if (session.id !== undefined) this.sessions.delete(session.id);
    void session.server.close().catch(() => undefined);
  }

  /** Ends idle sessions, and (every SESSION_RECHECK_MS) those whose token no longer holds. */
  async sweep(): Promise<void> {
    const now = Date.now();
    for (const s of [...this.sessions.values()]) if (s.open === 0 && now - s.lastSeen >= this.opts.idleMs) this.end(s);
    if (now - this.lastRecheck < SESSION_RECHECK_MS) return;
    this.lastRecheck = now;
    const byToken = new Map<number, Session[]>();
    for (const s of this.sessions.values()) byToken.set(s.tokenId, [...(byToken.get(s.tokenId) ?? []), s]);
    for (const own of byToken.values()) {
      let ok: boolean;
      try {
        ok = (await own[0]!.recheck()).teamId === own[0]!.teamId;
      } catch (err) {
        // A store that does not answer is no revocation: the next round decides.
        if (!(err instanceof BerthError) || err.kind === 'store_unavailable') continue;
        ok = false;
      }
      if (!ok) for (const s of own) this.end(s);
    }
  }

  private startTimer(): void {
    if (this.timer) return;
    const every = Math.max(100, Math.min(SESSION_RECHECK_MS, Math.floor(this.opts.idleMs / 4)));
    this.timer = setInterval(() => {
      if (this.sessions.size === 0) return this.stopTimer();
      void this.sweep().catch((err: unknown) => this.opts.logger.warn({ err }, 'mcp session sweep failed'));
    }, every);
    this.timer.unref();
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Ends every session (the server closes; an open GET stream would hold up its close). */
  async closeAll(): Promise<void> {
    this.stopTimer();
    await Promise.all([...this.sessions.values()].map((s) => s.server.close().catch(() => undefined)));
    this.sessions.clear();
  }
}
