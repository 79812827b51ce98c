import Bottleneck from 'bottleneck';
import type { Redis } from 'ioredis';
import { BerthError } from '../errors.js';
import { assertRedisUp, redisClient } from './redis.js';

export interface JobQueueConfig {
  /** Jobs running at once per server. */
  concurrency: number;
  /** Jobs allowed to wait per server; one more is refused with 429. */
  cap: number;
  /** With Redis, queues are Bottleneck clusters shared by every berth process. */
  redisUrl: string | null;
}

/** Seconds suggested to a caller refused by a full queue when no job duration is known yet. */
const DEFAULT_RETRY_AFTER_S = 5;
/** A slot held by a process that died is freed after this long without a refresh. */
const SLOT_TTL_MS = 120_000;

// Admits a job when fewer than ARGV[3] jobs (running or waiting) hold a slot on this server,
// after dropping slots whose holders stopped refreshing them.
const TAKE_SLOT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
return 1`;

type RedisWithSlots = Redis & { berthTakeSlot(key: string, now: number, expires: number, max: number, id: string): Promise<number> };

/**
 * Per-server queues for long work (deployments, migrations), built on Bottleneck, which is made
 * for exactly this: a concurrency per server (shared through Redis when clustered). The queue cap
 * is a slot count of our own, because a Bottleneck cluster's highWater counts only the local
 * queue. A full queue answers the
 * contract's 429 "Deployment queue is full." with Retry-After, whatever the caller's own bucket says.
 */
export class JobQueues {
  private readonly limiters = new Map<string, Bottleneck>();
  private readonly connection: Bottleneck.IORedisConnection | undefined;
  private seq = 0;
  /** Moving average of job durations, for Retry-After. */
  private avgJobMs = 0;

  /** Slots per server in this process (local mode). */
  private readonly localSlots = new Map<string, number>();
  /** Shared slots (Redis mode): Bottleneck clusters share concurrency, not the queue length. */
  private readonly redis: RedisWithSlots | undefined;

  constructor(private readonly config: JobQueueConfig) {
    if (config.redisUrl) {
      this.connection = new Bottleneck.IORedisConnection({ clientOptions: config.redisUrl as never });
      const redis = redisClient(config.redisUrl);
      redis.defineCommand('berthTakeSlot', { numberOfKeys: 1, lua: TAKE_SLOT });
      this.redis = redis as RedisWithSlots;
    }
  }

  /** At most concurrency + cap jobs per server hold a slot, across every process sharing Redis. */
  private async takeSlot(serverId: string, id: string): Promise<boolean> {
    const max = this.config.concurrency + this.config.cap;
    if (!this.redis) {
      const n = this.localSlots.get(serverId) ?? 0;
      if (n >= max) return false;
      this.localSlots.set(serverId, n + 1);
      return true;
    }
    assertRedisUp(this.redis);
    const now = Date.now();
    return (await this.redis.berthTakeSlot(`berth:jobs:${serverId}`, now, now + SLOT_TTL_MS, max, id)) === 1;
  }

  private async releaseSlot(serverId: string, id: string): Promise<void> {
    if (!this.redis) {
      this.localSlots.set(serverId, Math.max(0, (this.localSlots.get(serverId) ?? 1) - 1));
      return;
    }
    await this.redis.zrem(`berth:jobs:${serverId}`, id);
  }

  /** Keeps a running job's slot alive in Redis, so only a dead process's slots expire. */
  private holdSlot(serverId: string, id: string): () => void {
    if (!this.redis) return () => undefined;
    const timer = setInterval(() => {
      void this.redis!.zadd(`berth:jobs:${serverId}`, 'XX', Date.now() + SLOT_TTL_MS, id).catch(() => undefined);
    }, SLOT_TTL_MS / 3);
    timer.unref();
    return () => clearInterval(timer);
  }

  private limiterFor(serverId: string): Bottleneck {
    let l = this.limiters.get(serverId);
    if (!l) {
      l = new Bottleneck({
        id: `berth-jobs-${serverId}`,
        maxConcurrent: this.config.concurrency,
        ...(this.connection ? { datastore: 'ioredis', connection: this.connection, clearDatastore: false, timeout: 3_600_000 } : {}),
      });
      this.limiters.set(serverId, l);
    }
    return l;
  }

  /**
   * Queues a job on a server's queue and resolves when it is accepted (not when it ends); `done`
   * settles with the job. Refuses at once with 429 when the queue is full.
   */
  async submit<T>(serverId: string, job: () => Promise<T>): Promise<{ done: Promise<T> }> {
    const id = `job-${process.pid}-${++this.seq}-${Date.now()}`;
    if (!(await this.takeSlot(serverId, id))) throw this.full();
    const stopHolding = this.holdSlot(serverId, id);
    const done = this.limiterFor(serverId)
      .schedule({ id }, async () => {
        const started = Date.now();
        try {
          return await job();
        } finally {
          const ms = Date.now() - started;
          this.avgJobMs = this.avgJobMs === 0 ? ms : this.avgJobMs * 0.8 + ms * 0.2;
        }
      })
      .finally(async () => {
        stopHolding();
        await this.releaseSlot(serverId, id).catch(() => undefined);
      });
    return { done };
  }

  private full(): BerthError {
    const seconds = this.avgJobMs > 0 ? Math.ceil((this.avgJobMs * Math.max(1, this.config.cap)) / this.config.concurrency / 1000) : DEFAULT_RETRY_AFTER_S;
    return new BerthError('queue_full', { retryAfter: Math.max(1, seconds) });
  }

  async close(): Promise<void> {
    // With a shared connection a limiter's disconnect returns nothing; the connection closes once.
    await Promise.all([...this.limiters.values()].map((l) => Promise.resolve(l.disconnect(false)).catch(() => undefined)));
    await Promise.resolve(this.connection?.disconnect(false)).catch(() => undefined);
    await this.redis?.quit().catch(() => undefined);
  }
}
