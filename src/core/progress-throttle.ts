import type { ProgressReporter } from './operation.js';

type Update = Parameters<ProgressReporter>[0];

/**
 * At most one progress notification per `intervalMs` for one call (a client renders each one),
 * never a stale one: an update that comes too soon waits, replaced by any later one, and goes out
 * when the interval has passed; `finish` sends the last state at once. Progress only grows (MCP
 * requires it): an update that does not grow it is dropped.
 */
export class ProgressThrottle {
  private last = 0;
  private sent = -Infinity;
  private pending: Update | undefined;
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    private readonly report: ProgressReporter,
    private readonly intervalMs = 250,
  ) {}

  push(u: Update): void {
    if (this.done || u.progress <= this.sent) return;
    this.pending = u;
    const wait = this.last + this.intervalMs - Date.now();
    if (wait <= 0) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), wait);
  }

  /** The last notification (sent at once, whatever the interval); later pushes are ignored. */
  finish(u?: Update): void {
    if (u && u.progress > this.sent) this.pending = u;
    this.flush();
    this.done = true;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const u = this.pending;
    this.pending = undefined;
    if (!u || u.progress <= this.sent) return;
    this.sent = u.progress;
    this.last = Date.now();
    void this.report(u).catch(() => undefined);
  }
}
