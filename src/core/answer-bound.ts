import { z } from 'zod';
import type { OperationContext } from './operation.js';
import { ProgressThrottle } from './progress-throttle.js';
import { SINGULAR, type Collection } from './model/kinds.js';
import { brief } from './runtime-fields.js';

/**
 * No call outlives its client's patience: an operation that waits on an engine or a job waits at
 * most the call's bound (config.answerWithinMs, or CallOptions.answerWithinMs for one call), then
 * answers with the status so far and how to follow the work, which goes on without the call. While
 * it waits, a caller that asked for progress (an MCP progress token) hears a heartbeat with the
 * work's phase: MCP clients give up on a silent request (60 s by default), and a heartbeat also
 * tells a person the work is alive.
 */

/** A heartbeat at least this often while waiting: within the 10 s the issue asks, with room for a late timer. */
export const HEARTBEAT_MS = 5_000;
/** The fewest milliseconds between two progress notifications of one call (at most four a second). */
export const PROGRESS_MIN_GAP_MS = 250;

/** Where a piece of work stands, as a progress notification says it. */
export interface Phase {
  message: string;
  /** The work's own measure (a migration's bytes), when it has one; otherwise seconds waited. */
  progress?: number;
  total?: number;
}

/**
 * How to follow work that goes on after the answer: the tool that reads it and its resource. Left
 * out of MCP tool schemas (berth.brief: the default tools/list's size budget); the answer's
 * message names the same, and REST and OpenAPI show the field.
 */
export const followSchema = brief(
  z
    .object({ tool: z.string(), arguments: z.record(z.string(), z.string()), resource: z.string() })
    .describe('How to follow the work after this answer: `tool` called with `arguments`, or the berth:// `resource`.'),
);
export type Follow = z.infer<typeof followSchema>;

/** What can be followed, by the tool that reads it and its resource URI. */
export const follow = {
  /** An application, database or service: its status as the engine reports it. */
  resource: (collection: Collection, uuid: string): Follow => ({ tool: `get_${SINGULAR[collection]}`, arguments: { uuid }, resource: `berth://${collection}/${uuid}` }),
  deployment: (uuid: string): Follow => ({ tool: 'get_deployment', arguments: { uuid }, resource: `berth://deployments/${uuid}` }),
  migration: (uuid: string): Follow => ({ tool: 'get_migration', arguments: { uuid }, resource: `berth://migrations/${uuid}` }),
  /** A database's backup executions (a run's or a restore's state is on its execution). */
  backupExecutions: (databaseUuid: string, backupUuid: string): Follow => ({
    tool: 'list_database_backup_executions',
    arguments: { uuid: databaseUuid, scheduled_backup_uuid: backupUuid },
    resource: `berth://databases/${databaseUuid}`,
  }),
};

/** One line naming what to follow, for a message. */
export const followText = (f: Follow) => `follow it with ${f.tool} ${Object.values(f.arguments).join(' ')} or ${f.resource}`;

/** A wait's outcome: the work's value when it ended within the bound. */
export type Waited<T> = { ended: true; value: T } | { ended: false };

/**
 * The bound of one call, made when its operation starts: every wait of the call shares one
 * deadline (a migrate that then waits for the start on its target does not get a second bound).
 */
export class AnswerBound {
  readonly startedAt = Date.now();
  private readonly deadline: number;
  private readonly throttle: ProgressThrottle | undefined;
  private last = 0;

  constructor(
    ctx: Pick<OperationContext, 'config' | 'answerWithinMs' | 'progress'>,
    private readonly heartbeatMs = HEARTBEAT_MS,
  ) {
    this.deadline = this.startedAt + (ctx.answerWithinMs ?? ctx.config.answerWithinMs);
    this.throttle = ctx.progress ? new ProgressThrottle(ctx.progress, PROGRESS_MIN_GAP_MS) : undefined;
  }

  /** Whether the caller hears progress (looks at the work are made only then). */
  get reporting(): boolean {
    return this.throttle !== undefined;
  }

  /** Whether the call waits to the end (a task's call): no answer before the work ends. */
  get toEnd(): boolean {
    return this.deadline === Infinity;
  }

  /** Milliseconds left before the call must answer (Infinity when it waits to the end). */
  left(): number {
    return Math.max(0, this.deadline - Date.now());
  }

  /** Whole seconds since the call started, for messages. */
  seconds(): number {
    return Math.round((Date.now() - this.startedAt) / 1000);
  }

  /**
   * A progress notification (throttled). MCP wants progress to grow: an update without a measure
   * of its own counts seconds waited, and one that would not grow is nudged just past the last.
   */
  report(p: Phase): void {
    if (!this.throttle) return;
    const own = p.progress ?? (Date.now() - this.startedAt) / 1000;
    this.last = own > this.last ? own : this.last + 0.001;
    this.throttle.push({ message: p.message, progress: this.last, ...(p.total !== undefined && p.total >= this.last ? { total: p.total } : {}) });
  }

  /** The last notification, sent at once when the call answers. */
  finish(p?: Phase): void {
    if (!this.throttle) return;
    if (p) this.report(p);
    this.throttle.finish();
  }

  /**
   * Waits for `work` at most until `ms` from now or the call's deadline, whichever is first (the
   * work goes on after: nothing here stops it). While waiting, a caller that hears progress gets
   * `look()` at once and then every heartbeat. A failure of the work is thrown as it is.
   */
  async wait<T>(work: Promise<T>, look?: () => Promise<Phase | undefined>, ms = Infinity): Promise<Waited<T>> {
    const limit = Math.min(ms, this.left());
    let timer: NodeJS.Timeout | undefined;
    let beat: NodeJS.Timeout | undefined;
    let settled = false;
    const tell = async () => {
      const p = await look?.().catch(() => undefined);
      if (p && !settled) this.report(p);
    };
    if (this.throttle && look) {
      void tell();
      beat = setInterval(() => void tell(), this.heartbeatMs);
    }
    try {
      const out = work.then((value) => ({ ended: true as const, value }));
      // setTimeout fires at once past 2^31-1 ms: a wait to the end has no timer at all.
      if (limit >= 2 ** 31 - 1) return await out;
      return await Promise.race([out, new Promise<Waited<T>>((res) => (timer = setTimeout(res, limit, { ended: false })))]);
    } finally {
      settled = true;
      clearTimeout(timer);
      clearInterval(beat);
    }
  }
}

/** The answer bound of one call. */
export const answerBound = (ctx: Pick<OperationContext, 'config' | 'answerWithinMs' | 'progress'>, heartbeatMs?: number) => new AnswerBound(ctx, heartbeatMs);
