import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { BerthError } from '../errors.js';

/** A command Redis has not answered within this is an outage (BERTH_REDIS_TIMEOUT_MS sets it). */
export const DEFAULT_REDIS_TIMEOUT_MS = 1_000;

/** ioredis is loaded only when Redis is configured: it is a large import for a start-up path (stdio). */
export function redisClient(url: string, timeoutMs = DEFAULT_REDIS_TIMEOUT_MS): RedisClient {
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
  redis.on('ready', () => everReady.add(redis));
  // The failure reaches the request that needed Redis (503); without a listener ioredis would
  // print every reconnect failure to stderr.
  redis.on('error', () => undefined);
  return redis;
}

/** Clients that have been connected once: until then commands wait in ioredis's queue (start-up). */
const everReady = new WeakSet<RedisClient>();
/** Clients whose Redis is connected but stopped answering (frozen, overloaded): see redisCall. */
const hung = new WeakSet<RedisClient>();

/**
 * Refuses at once (503) while a Redis that was reachable is away, or connected but not answering,
 * instead of queueing the command until a reconnect attempt or its timeout fails: a request
 * answers in a millisecond and /api/ready says "not ready" before a load balancer's check times out.
 */
export function assertRedisUp(redis: RedisClient): void {
  if ((redis.status !== 'ready' && everReady.has(redis)) || hung.has(redis)) throw new BerthError('store_unavailable');
}

const isTimeout = (err: unknown) => /Command timed out/.test(String((err as Error | null)?.message));

/**
 * One command on a shared client: a timeout means Redis is hung (the TCP connection stays open,
 * so ioredis still says "ready"). The command answers 503, and every later one at once, until a
 * PING answers again (tried every quarter of a second): a hung Redis costs each request the
 * timeout once, not every time, and berth recovers by itself.
 */
export async function redisCall<T>(redis: RedisClient, command: () => Promise<T>): Promise<T> {
  assertRedisUp(redis);
  try {
    return await command();
  } catch (err) {
    if (!isTimeout(err)) throw err;
    markHung(redis);
    throw new BerthError('store_unavailable');
  }
}

function markHung(redis: RedisClient): void {
  if (hung.has(redis)) return;
  hung.add(redis);
  const probe = async () => {
    try {
      await redis.ping();
      hung.delete(redis);
    } catch {
      setTimeout(probe, 250).unref();
    }
  };
  void probe();
}
