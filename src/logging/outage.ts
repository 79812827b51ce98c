import type { Logger } from 'pino';
import { unexpected } from '../errors.js';

/**
 * How a worker that ticks reports its store (or Redis) being away: one warning when the outage
 * begins and one line when it ends, instead of a line (or an error with a stack) every tick. A
 * failure that is not an outage is still an error, every time.
 */
export class OutageLog {
  private downSince: number | undefined;

  constructor(
    private readonly logger: Logger,
    /** The worker, as the log names it. */
    private readonly what: string,
    /** The level of a failure that is not an outage (each one is logged). */
    private readonly otherLevel: 'warn' | 'error' = 'error',
  ) {}

  /** A tick failed. */
  failed(err: unknown): void {
    if (unexpected(err).kind !== 'store_unavailable') {
      this.logger[this.otherLevel]({ err }, `${this.what} failed`);
      return;
    }
    if (this.downSince !== undefined) return;
    this.downSince = Date.now();
    this.logger.warn({ err: (err as Error)?.message }, `${this.what}: store unavailable; retrying quietly until it is back`);
  }

  /** A tick went through: ends an outage, if there was one. */
  ok(): void {
    if (this.downSince === undefined) return;
    this.logger.warn({ downMs: Date.now() - this.downSince }, `${this.what}: store available again`);
    this.downSince = undefined;
  }
}
