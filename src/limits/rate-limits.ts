import { BerthError } from '../errors.js';
import { MemoryBuckets, RedisBuckets, type Buckets, type RateDecision } from './buckets.js';
import { redisClient } from './redis.js';

export { redisClient } from './redis.js';

/** A named limit: requests per window for one kind of bucket. */
export interface LimitSpec {
  bucket: string;
  limit: number;
  /** Its own window (an hour, say); else the instance's rate window. */
  windowMs?: number;
}

export interface RateLimitConfig {
  /** API_RATE_LIMIT: requests per window per user (or per address without a user); 0 turns it off. */
  apiRateLimit: number;
  windowMs: number;
  redisUrl: string | null;
  /** A Redis command unanswered this long is an outage (503). */
  redisTimeoutMs?: number;
}

/** /api/health's own limit per source address, whatever API_RATE_LIMIT says (spec). */
export const HEALTH_LIMIT: LimitSpec = { bucket: 'health', limit: 1_000 };

/** The limits of one berth process, read once at start. */
export class RateLimits {
  readonly general: LimitSpec | null;

  private constructor(
    private readonly buckets: Buckets,
    readonly windowMs: number,
    apiRateLimit: number,
  ) {
    this.general = apiRateLimit > 0 ? { bucket: 'api', limit: apiRateLimit } : null;
  }

  static create(config: RateLimitConfig): RateLimits {
    const buckets = config.redisUrl ? new RedisBuckets(redisClient(config.redisUrl, config.redisTimeoutMs)) : new MemoryBuckets(config.windowMs);
    return new RateLimits(buckets, config.windowMs, config.apiRateLimit);
  }

  /** Charges one request; `allowed` is false when the bucket was already empty. */
  charge(spec: LimitSpec, key: string): RateDecision | Promise<RateDecision> {
    return this.buckets.hit(`${spec.bucket}:${key}`, spec.limit, spec.windowMs ?? this.windowMs);
  }

  peek(spec: LimitSpec, key: string): RateDecision | Promise<RateDecision> {
    return this.buckets.peek(`${spec.bucket}:${key}`, spec.limit, spec.windowMs ?? this.windowMs);
  }

  close(): Promise<void> {
    return this.buckets.close();
  }
}

export function rateLimited(d: RateDecision): BerthError {
  const retryAfter = Math.max(1, Math.ceil((d.resetAt - Date.now()) / 1000));
  return new BerthError('rate_limited', { retryAfter, resetAt: Math.ceil(d.resetAt / 1000), rate: d });
}

/** The response headers for a decision (every API and /mcp response carries them). */
export function rateHeaders(d: RateDecision): Record<string, string> {
  return { 'X-RateLimit-Limit': String(d.limit), 'X-RateLimit-Remaining': String(d.remaining) };
}
