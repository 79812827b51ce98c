import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { BerthError } from '../errors.js';

/** A command Redis has not answered within this is an outage (BERTH_REDIS_TIMEOUT_MS sets it). */
export const DEFAULT_REDIS_TIMEOUT_MS = 1_000;

/**
 * Whether one Redis answers, shared by every client of this process that talks to it (the rate
 * limiter's, the change feed's): a timeout seen by any of them makes all of them refuse at once,
 * and fails the calls already waiting, until a PING answers again.
 */
class RedisHealth {
  hung = false;
  readonly clients = new Set<RedisClient>();
  /** Calls in flight: each one's way to fail at once when another call finds Redis hung. */
  readonly waiting = new Set<() => void>();
  private probing = false;

  constructor(readonly timeoutMs: number) {}

  markHung(): void {
    if (!this.hung) {
      this.hung = true;
      this.probe();
    }
    for (const fail of [...this.waiting]) fail();
  }

  /** Tries a PING every quarter of a second on a connected client, until one answers. */
  private probe(): void {
    if (this.probing) return;
    this.probing = true;
    const again = () => setTimeout(tick, 250).unref();
    const tick = async () => {
      if (!this.hung) return void (this.probing = false);
      const live = [...this.clients].find((c) => c.status === 'ready');
      if (!live) {
        // Every client closed (the instance stopped): nothing is left to refuse.
        if (this.clients.size === 0) this.answered();
        else again();
        return;
      }
      try {
        await live.ping();
        this.answered();
      } catch {
        again();
      }
    };
    void tick();
  }

  answered(): void {
    this.hung = false;
    this.probing = false;
  }
}

/** One health per Redis address (and timeout) in this process. */
const healths = new Map<string, RedisHealth>();
const healthOfClient = new WeakMap<RedisClient, RedisHealth>();

/** ioredis is loaded only when Redis is configured: it is a large import for a start-up path (stdio). */
export function redisClient(url: string, timeoutMs = DEFAULT_REDIS_TIMEOUT_MS, opts: { subscriber?: boolean } = {}): RedisClient {
  const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const redis = new Redis(url, {
    // Fail fast: a command cut by a lost connection fails at once (no resend on each reconnect
    // attempt, which held requests for seconds), a hung Redis fails within the timeout, and
    // reconnects are tried often so the end of an outage is seen soon.
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: (times) => Math.min(50 * times, 500),
    enableAutoPipelining: true,
  });
  const key = `${timeoutMs} ${url}`;
  let health = healths.get(key);
  if (!health) healths.set(key, (health = new RedisHealth(timeoutMs)));
  healthOfClient.set(redis, health);
  // A subscriber connection sends no commands of berth's, so it is not the one to PING on.
  if (!opts.subscriber) health.clients.add(redis);
  redis.on('ready', () => {
    everReady.add(redis);
    // A connection (re)made and past its ready check answers: Redis is back.
    health.answered();
  });
  redis.on('end', () => health.clients.delete(redis));
  // The failure reaches the request that needed Redis (503); without a listener ioredis would
  // print every reconnect failure to stderr.
  redis.on('error', () => undefined);
  return redis;
}

/** Clients that have been connected once: until then commands wait in ioredis's queue (start-up). */
const everReady = new WeakSet<RedisClient>();

/**
 * Refuses at once (503) while a Redis that was reachable is away, or connected but not answering,
 * instead of queueing the command until a reconnect attempt or its timeout fails: a request
 * answers in a millisecond and /api/ready says "not ready" before a load balancer's check times out.
 */
export function assertRedisUp(redis: RedisClient): void {
  if ((redis.status !== 'ready' && everReady.has(redis)) || healthOfClient.get(redis)?.hung) throw new BerthError('store_unavailable');
}

const isTimeout = (err: unknown) => /Command timed out/.test(String((err as Error | null)?.message));

/**
 * One command on a shared client, bounded by one timeout from when it was asked for: a timeout
 * means Redis is hung (the TCP connection stays open, so ioredis still says "ready"). The command
 * answers 503, so do the calls already waiting on any client of that Redis, and every later one
 * at once, until a PING answers again: a hung Redis costs a request at most one timeout, and
 * berth recovers by itself.
 * The bound is kept here, not left to ioredis's commandTimeout: with auto-pipelining a command
 * waits unsent until the pipeline before it settles, and its own timer starts only then, so
 * requests racing the first one paid the timeout twice.
 */
export function redisCall<T>(redis: RedisClient, command: () => Promise<T>): Promise<T> {
  try {
    assertRedisUp(redis);
  } catch (err) {
    return Promise.reject(err);
  }
  const health = healthOfClient.get(redis);
  if (!health) return command();
  return new Promise<T>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      health.waiting.delete(fail);
    };
    const fail = () => {
      done();
      reject(new BerthError('store_unavailable'));
    };
    const timer = setTimeout(() => health.markHung(), health.timeoutMs);
    health.waiting.add(fail);
    command().then(
      (value) => {
        done();
        resolve(value);
      },
      (err: unknown) => {
        if (isTimeout(err)) return health.markHung();
        done();
        reject(err);
      },
    );
  });
}
