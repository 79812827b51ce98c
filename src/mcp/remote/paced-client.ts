import Bottleneck from 'bottleneck';
import { request, type Dispatcher } from 'undici';

export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Methods that may be sent again without risk of doing the change twice. */
const SAFE = new Set<Method>(['GET', 'HEAD']);

export interface PacedClientOptions {
  baseUrl: string;
  headers?: Record<string, string>;
  /** Requests per minute to stay under; the server's X-RateLimit-Remaining also pauses us. */
  perMinute?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Retries of one safe request after 429/503 or a network error. */
  maxRetries?: number;
  /** Past this total wait, give up with RetryLaterError. */
  maxWaitMs?: number;
  /** First backoff step; each retry doubles the cap of the full-jitter draw. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  timeoutMs?: number;
  dispatcher?: Dispatcher;
  /** Told about every wait, e.g. to send MCP progress while a tool call waits. */
  onWait?: (ms: number, reason: string) => void;
  random?: () => number;
}

/** What one request may add: its own wait reports (MCP progress) and cancellation. */
export interface PacedRequestOptions {
  onWait?: (ms: number, reason: string) => void;
  signal?: AbortSignal;
}

export interface PacedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request that could not be made now; retry after `seconds`. */
export class RetryLaterError extends Error {
  constructor(
    readonly seconds: number,
    readonly response?: PacedResponse,
  ) {
    super(`retry after ${seconds} s`);
    this.name = 'RetryLaterError';
  }
}

const header = (h: PacedResponse['headers'], name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The server's own hint of when to come back, in ms from now (Retry-After, then X-RateLimit-Reset). */
export function serverWaitMs(h: PacedResponse['headers'], now = Date.now()): number | undefined {
  const retryAfter = header(h, 'retry-after');
  if (retryAfter !== undefined) {
    const s = Number(retryAfter);
    if (Number.isFinite(s)) return Math.max(0, s * 1000);
    const at = Date.parse(retryAfter);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  const reset = Number(header(h, 'x-ratelimit-reset'));
  return Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - now) : undefined;
}

/**
 * At most `max` jobs at once, the rest in FIFO order. Without a budget to pace to, this is all
 * the client needs of a limiter, and it costs nothing per request: Bottleneck's local store
 * yields to a timer several times per job (~5 ms a request on these machines, measured by
 * bench/remote), which would dominate a loopback tool call.
 */
class Gate {
  private running = 0;
  private readonly waiting: Array<{ start: () => void; drop: (err: Error) => void }> = [];
  private closed = false;

  constructor(private readonly max: number) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('This client has been closed.');
    if (this.running < this.max) this.running++;
    // A finishing job hands its slot straight to the next in line.
    else await new Promise<void>((start, drop) => this.waiting.push({ start, drop }));
    try {
      return await job();
    } finally {
      const next = this.waiting.shift();
      if (next) next.start();
      else this.running--;
    }
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.drop(new Error('This client has been closed.'));
  }
}

/**
 * An HTTP client that paces itself to a budget (Bottleneck reservoir), honours Retry-After and
 * X-RateLimit-Reset, then backs off exponentially with full jitter. Retries of one request run
 * inside that request's own job, one after another: never in parallel. POST/PUT/PATCH/DELETE
 * are never retried automatically; a 429 on them is returned to the caller as RetryLaterError.
 */
export class PacedClient {
  /** Bottleneck when there is a budget to pace to (its reservoir); otherwise a plain gate. */
  private readonly limiter: Bottleneck | undefined;
  private readonly gate: Gate;
  /** While the server says the budget is spent, no request leaves before this time. */
  private pausedUntil = 0;

  constructor(private readonly opts: PacedClientOptions) {
    const perMinute = opts.perMinute;
    this.gate = new Gate(opts.concurrency ?? 4);
    this.limiter = perMinute
      ? new Bottleneck({
          maxConcurrent: opts.concurrency ?? 4,
          reservoir: perMinute,
          reservoirRefreshAmount: perMinute,
          reservoirRefreshInterval: 60_000,
        })
      : undefined;
  }

  request(method: Method, path: string, body?: unknown, headers: Record<string, string> = {}, options: PacedRequestOptions = {}): Promise<PacedResponse> {
    const job = () => this.withRetries(method, path, body, headers, options);
    return this.limiter ? this.limiter.schedule(job) : this.gate.run(job);
  }

  private backoffMs(attempt: number): number {
    const base = this.opts.baseDelayMs ?? 250;
    const cap = Math.min(this.opts.maxDelayMs ?? 30_000, base * 2 ** attempt);
    return Math.floor((this.opts.random ?? Math.random)() * cap);
  }

  private async wait(ms: number, reason: string, options: PacedRequestOptions): Promise<void> {
    if (ms <= 0) return;
    this.opts.onWait?.(ms, reason);
    options.onWait?.(ms, reason);
    const signal = options.signal;
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private async withRetries(method: Method, path: string, body: unknown, headers: Record<string, string>, options: PacedRequestOptions): Promise<PacedResponse> {
    const maxRetries = this.opts.maxRetries ?? 4;
    const maxWait = this.opts.maxWaitMs ?? 60_000;
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
      const pause = this.pausedUntil - Date.now();
      if (pause > 0) {
        if (waited + pause > maxWait) throw new RetryLaterError(Math.ceil(pause / 1000));
        await this.wait(pause, 'rate limit budget spent', options);
        waited += pause;
      }
      let res: PacedResponse;
      try {
        res = await this.send(method, path, body, headers, options.signal);
      } catch (err) {
        if (!SAFE.has(method) || attempt >= maxRetries || options.signal?.aborted) throw err;
        const ms = this.backoffMs(attempt);
        if (waited + ms > maxWait) throw err;
        await this.wait(ms, `network error: ${(err as Error).message}`, options);
        waited += ms;
        continue;
      }
      this.notePace(res);
      if (res.status !== 429 && res.status !== 503) return res;
      const hint = serverWaitMs(res.headers);
      const ms = Math.max(hint ?? 0, this.backoffMs(attempt));
      if (!SAFE.has(method) || attempt >= maxRetries || waited + ms > maxWait) {
        throw new RetryLaterError(Math.max(1, Math.ceil((hint ?? ms) / 1000)), res);
      }
      await this.wait(ms, `server answered ${res.status}`, options);
      waited += ms;
    }
  }

  /** X-RateLimit-Remaining: 0 means the next request would be refused until the window resets. */
  private notePace(res: PacedResponse): void {
    const remaining = Number(header(res.headers, 'x-ratelimit-remaining'));
    if (remaining !== 0) return;
    // Without a reset time (the spec puts it on 429s only) the next answer tells us how long.
    const ms = serverWaitMs({ 'x-ratelimit-reset': header(res.headers, 'x-ratelimit-reset') });
    if (ms !== undefined) this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  private async send(method: Method, path: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<PacedResponse> {
    const timeout = this.opts.timeoutMs ?? 30_000;
    const res = await request(new URL(path, this.opts.baseUrl), {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...this.opts.headers, ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: timeout,
      bodyTimeout: timeout,
      dispatcher: this.opts.dispatcher,
      signal,
    });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  }

  async close(): Promise<void> {
    this.gate.close();
    await this.limiter?.stop({ dropWaitingJobs: true }).catch(() => undefined);
  }
}
