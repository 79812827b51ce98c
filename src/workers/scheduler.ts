import type { Logger } from 'pino';
import { Periodic } from './periodic.js';

/**
 * One kind of scheduled work: at each tick it claims what is due (once across berth instances,
 * by a unique due time in the store) and runs it. A new kind of schedule (a scheduled task, say)
 * implements this and is added to the list in src/assemble.ts.
 */
export interface Schedule {
  /** What the log names it when a tick fails. */
  readonly scheduleName: string;
  /** At start: marks runs that a stop or a crash cut off as failed. */
  recover?(): Promise<void>;
  /** Claims and runs (or starts) what is due at `now`. */
  tick(now: Date): Promise<void>;
}

/**
 * The one scheduler: every schedule ticks here, one after another, every `intervalMs`. `serve`
 * and `berth mcp` start it the same way (src/assemble.ts), so a stdio-only installation runs its
 * backups and cleanups too. A failing schedule does not keep the others from their turn.
 */
export class Scheduler extends Periodic {
  constructor(
    private readonly schedules: readonly Schedule[],
    logger: Logger,
    intervalMs: number,
  ) {
    super(logger, intervalMs, 'schedules');
  }

  async start(): Promise<void> {
    for (const s of this.schedules) await s.recover?.();
    this.schedule();
  }

  async tick(now = new Date()): Promise<void> {
    let first: unknown;
    for (const s of this.schedules) {
      try {
        await s.tick(now);
      } catch (err) {
        this.logger.warn({ err: (err as Error).message, schedule: s.scheduleName }, 'a schedule tick failed');
        first ??= err;
      }
    }
    if (first !== undefined) throw first;
  }
}
