import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryOptions {
  /** Retries after the first attempt (so `retries: 3` is at most 4 attempts). */
  retries: number;
  /** Delay cap of the first retry; doubles each retry. */
  baseDelayMs: number;
  /** Upper bound of any one delay. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { retries: 3, baseDelayMs: 200, maxDelayMs: 3_000 };

/**
 * Exponential backoff with "equal jitter": half the capped exponential delay, plus a random part
 * of up to the other half, so retries from many callers spread out but never fire immediately.
 */
export function backoffDelay(retry: number, opts: RetryOptions, random: () => number = Math.random): number {
  const cap = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** retry);
  return Math.round(cap / 2 + random() * (cap / 2));
}

export async function sleepWithSignal(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return;
  await sleep(ms, undefined, signal ? { signal } : undefined);
}
