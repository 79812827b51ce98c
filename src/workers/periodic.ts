import type { Logger } from 'pino';
import { OutageLog } from '../logging/outage.js';

/**
 * A worker that ticks every `intervalMs`: one tick at a time (the next is timed from the end of
 * the last), none after stop(), which waits for the tick in progress. The timer never keeps the
 * process alive.
 */
export abstract class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly outage: OutageLog;

  constructor(
    protected readonly logger: Logger,
    protected readonly intervalMs: number,
    /** What the log says when a tick fails. */
    what: string,
  ) {
    this.outage = new OutageLog(logger, what);
  }

  abstract tick(): Promise<void>;

  /** Begins ticking now. */
  protected schedule(): void {
    if (this.stopped) return;
    this.running = this.tick().then(
      () => this.outage.ok(),
      (err) => this.outage.failed(err),
    );
    this.timer = setTimeout(() => void this.running.then(() => this.schedule()), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
