import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { BerthError } from '../errors.js';

/** ioredis is loaded only when Redis is configured: it is a large import for a start-up path (stdio). */
export function redisClient(url: string): RedisClient {
  const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const redis = new Redis(url, {
    // Fail fast: a command cut by a lost connection fails at once (no resend on each reconnect
    // attempt, which held requests for seconds), a hung Redis fails in a second, and reconnects
    // are tried often so the end of an outage is seen soon.
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 1_000,
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

/**
 * Refuses at once (503) while a Redis that was reachable is away, instead of queueing the command
 * until a reconnect attempt fails: a request answers in a millisecond and /api/ready says "not
 * ready" before a load balancer's check times out.
 */
export function assertRedisUp(redis: RedisClient): void {
  if (redis.status !== 'ready' && everReady.has(redis)) throw new BerthError('store_unavailable');
}
