import type { Logger } from 'pino';

/**
 * A worker that ticks every `intervalMs`: one tick at a time (the next is timed from the end of
 * the last), none after stop(), which waits for the tick in progress. The timer never keeps the
 * process alive.
 */
export abstract class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    protected readonly logger: Logger,
    protected readonly intervalMs: number,
    /** What the log says when a tick fails. */
    private readonly what: string,
  ) {}

  abstract tick(): Promise<void>;

  /** Begins ticking now. */
  protected schedule(): void {
    if (this.stopped) return;
    this.running = this.tick().catch((err) => this.logger.error({ err }, `${this.what} failed`));
    this.timer = setTimeout(() => void this.running.then(() => this.schedule()), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
