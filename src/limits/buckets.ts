import type { Redis } from 'ioredis';
import { redisCall } from './redis.js';

/** The outcome of charging one request to a bucket. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch milliseconds when the current window ends. */
  resetAt: number;
}

/**
 * Fixed-window counters: the window opens at a key's first hit and lasts windowMs (the way
 * Laravel's throttle, which the spec describes, counts). Admission is one constant-time step:
 * synchronous in memory, one atomic script in Redis, so a bucket never admits more than its
 * limit per window, however many requests race.
 */
export interface Buckets {
  hit(key: string, limit: number, windowMs: number): RateDecision | Promise<RateDecision>;
  /** The bucket's state without charging it. */
  peek(key: string, limit: number, windowMs: number): RateDecision | Promise<RateDecision>;
  close(): Promise<void>;
}

export class MemoryBuckets implements Buckets {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepMs = 60_000) {
    // Expired windows are dropped in the background so memory follows active keys only.
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
    }, sweepMs);
    this.sweeper.unref();
  }

  hit(key: string, limit: number, windowMs: number): RateDecision {
    const now = Date.now();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    if (w.count >= limit) return { allowed: false, limit, remaining: 0, resetAt: w.resetAt };
    w.count++;
    return { allowed: true, limit, remaining: limit - w.count, resetAt: w.resetAt };
  }

  peek(key: string, limit: number, windowMs: number): RateDecision {
    const now = Date.now();
    const w = this.windows.get(key);
    if (!w || w.resetAt <= now) return { allowed: true, limit, remaining: limit, resetAt: now + windowMs };
    return { allowed: w.count < limit, limit, remaining: Math.max(0, limit - w.count), resetAt: w.resetAt };
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }
}

// INCR, and on a window's first hit (or a key that lost its expiry) set the window length.
const HIT = `
local c = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if c == 1 or ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {c, ttl}`;

type RedisWithHit = Redis & { berthHit(key: string, windowMs: number): Promise<[number, number]> };

/** Buckets shared by every berth process using the same Redis: one round trip per request. */
export class RedisBuckets implements Buckets {
  private readonly redis: RedisWithHit;

  constructor(
    redis: Redis,
    private readonly prefix = 'berth:rl:',
  ) {
    redis.defineCommand('berthHit', { numberOfKeys: 1, lua: HIT });
    this.redis = redis as RedisWithHit;
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const [count, ttl] = await redisCall(this.redis, () => this.redis.berthHit(this.prefix + key, windowMs));
    const resetAt = Date.now() + ttl;
    return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetAt };
  }

  async peek(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const [count, ttl] = await redisCall(this.redis, () =>
      this.redis
        .multi()
        .get(this.prefix + key)
        .pttl(this.prefix + key)
        .exec()
        .then((r) => [Number(r?.[0]?.[1] ?? 0), Number(r?.[1]?.[1] ?? -2)]),
    );
    const resetAt = Date.now() + (ttl! > 0 ? ttl! : windowMs);
    return { allowed: count! < limit, limit, remaining: Math.max(0, limit - count!), resetAt };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
