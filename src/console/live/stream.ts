import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { BerthError } from '../../errors.js';
import type { Db } from '../../store/db.js';
import { contentSecurityPolicy } from '../layout.js';
import type { Person } from '../session.js';
import { truncateLog } from '../../core/operations/deployments.js';
import { LOG_CHARS, type LiveView } from './views.js';

export interface LiveTiming {
  /** How often each stream reads the store (ms). */
  pollMs: number;
  /** How often an idle stream sends a comment line, so proxies and the browser keep it open (ms). */
  heartbeatMs: number;
}

/** Read when a stream opens (an in-process test shortens them). */
export const LIVE_TIMING: LiveTiming = { pollMs: 1000, heartbeatMs: 15_000 };

/** Open streams one session may hold on one instance (tabs left open); each polls the store. */
export const STREAMS_PER_SESSION = 12;

/** Why a stream ended, as its last event (`end`) says; the page's script then stops reconnecting. */
export type EndReason = 'finished' | 'signed-out' | 'gone' | 'shutdown';

/** Where a stream's log stands: how long the stored log was, and its last characters (to see it only grew). */
export interface LogMark {
  length: number;
  tail: string;
}

const TAIL = 64;

/**
 * What to send for a stored log, given what was sent: only what was added when it grew (the end
 * sent is still where it was), else its last LOG_CHARS whole (new, or its start was cut by the
 * store's bounded tail), so a long build log is not sent again at every line.
 */
export function logChange(sent: LogMark | undefined, now: string): { change: { append: string } | { reset: string } | null; mark: LogMark } {
  const mark = { length: now.length, tail: now.slice(-TAIL) };
  if (sent && now.length >= sent.length && now.slice(sent.length - sent.tail.length, sent.length) === sent.tail) {
    return { change: now.length > sent.length ? { append: now.slice(sent.length) } : null, mark };
  }
  return { change: { reset: truncateLog(now, false, LOG_CHARS).text }, mark };
}

const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** Whether the person's session is still there and unexpired (signing out anywhere deletes it). */
async function sessionAlive(db: Db, person: Person): Promise<boolean> {
  const row = await db.selectFrom('console_sessions').select('expires_at').where('id_hash', '=', person.sessionHash).executeTakeFirst();
  return row !== undefined && Date.parse(row.expires_at) > Date.now();
}

export interface LiveStreams {
  /** Ends every open stream (the server is closing: an open stream would hold its close). */
  closeAll(): void;
}

/**
 * Server-sent events for one page: the view at once (`state`, and `log` for a log), then only
 * what changed, read from the store every pollMs. Reading the store rather than an in-process
 * emitter is deliberate: a deployment may run on another instance sharing the store. The stream
 * ends with an `end` event when the view ended, the session ends or is revoked, or the person
 * lost access (`gone`); the browser's EventSource would otherwise reconnect.
 */
export function liveStreams(
  deps: { db: Db; logger: Logger },
  timing: () => LiveTiming,
): LiveStreams & {
  open(req: FastifyRequest, reply: FastifyReply, person: Person, first: LiveView, read: () => Promise<LiveView | null>): void;
} {
  const open = new Set<(reason: EndReason) => void>();
  const perSession = new Map<string, number>();
  return {
    closeAll() {
      for (const end of [...open]) end('shutdown');
    },
    open(req, reply, person, first, read) {
      const { pollMs, heartbeatMs } = timing();
      const held = perSession.get(person.sessionHash) ?? 0;
      if (held >= STREAMS_PER_SESSION) throw new BerthError('rate_limited', { message: 'Too many live pages open in this session; close some.' });
      perSession.set(person.sessionHash, held + 1);
      let counted = true;
      const release = () => {
        if (!counted) return;
        counted = false;
        const n = (perSession.get(person.sessionHash) ?? 1) - 1;
        if (n > 0) perSession.set(person.sessionHash, n);
        else perSession.delete(person.sessionHash);
      };
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        // Proxies (nginx) would otherwise buffer the stream.
        'x-accel-buffering': 'no',
        'content-security-policy': contentSecurityPolicy(),
        'x-content-type-options': 'nosniff',
      });
      let sentState = '';
      let sentLog: LogMark | undefined;
      let closed = false;
      let poll: NodeJS.Timeout | undefined;
      const write = (chunk: string) => {
        if (!closed) res.write(chunk);
      };
      const send = (v: LiveView) => {
        const state = JSON.stringify({ text: v.text, tables: v.tables });
        if (state !== sentState) {
          sentState = state;
          write(`event: state\ndata: ${state}\n\n`);
        }
        if (v.log !== undefined) {
          const { change, mark } = logChange(sentLog, v.log);
          sentLog = mark;
          if (change) write(frame('log', change));
        }
      };
      const end = (reason: EndReason) => {
        if (closed) return;
        write(frame('end', { reason }));
        closed = true;
        open.delete(end);
        release();
        clearTimeout(poll);
        clearInterval(beat);
        res.end();
      };
      open.add(end);
      const beat = setInterval(() => write(': heartbeat\n\n'), heartbeatMs);
      res.on('close', () => {
        closed = true;
        open.delete(end);
        release();
        clearTimeout(poll);
        clearInterval(beat);
      });
      const tick = async () => {
        try {
          if (!(await sessionAlive(deps.db, person))) return end('signed-out');
          const v = await read();
          if (closed) return;
          if (!v) return end('gone');
          send(v);
          if (v.ended) return end('finished');
        } catch (err) {
          // A store hiccup: say nothing to the page (it keeps what it shows), try again.
          deps.logger.warn({ reqId: req.id, err: (err as Error).message }, 'live view read failed');
        }
        if (!closed) poll = setTimeout(() => void tick(), pollMs);
      };
      // The browser retries a dropped stream after this long.
      write('retry: 3000\n\n');
      send(first);
      if (first.ended) end('finished');
      else poll = setTimeout(() => void tick(), pollMs);
    },
  };
}
