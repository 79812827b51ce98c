import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { sql } from 'kysely';
import type { Redis as RedisClient } from 'ioredis';
import type { Client as PgClient } from 'pg';
import type { Db } from '../store/db.js';
import { redisCall, redisClient } from '../limits/redis.js';
import { LocalChanges, type Change, type ChangeFeed, type ChangeListener } from './changes.js';

/** The channel every instance of one deployment publishes on and listens to. */
export const CHANGE_CHANNEL = 'berth_changes';

/** What goes over the wire: the change and who sent it (an instance hears its own changes locally, at once). */
interface Wire {
  from: string;
  change: Change;
}

/**
 * A feed shared by several instances: a change is delivered to this process's listeners at
 * once and sent to the others through a carrier; what comes back from the carrier with this
 * process's own mark is dropped.
 */
abstract class SharedChanges implements ChangeFeed {
  protected readonly local = new LocalChanges();
  protected readonly self = randomUUID();

  constructor(protected readonly logger: Logger) {}

  publish(change: Change): void {
    if (change.uuids.length === 0 && !change.listChanged) return;
    this.local.publish(change);
    const wire: Wire = { from: this.self, change };
    this.send(JSON.stringify(wire)).catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, 'changes: could not send a change to the other instances'));
  }

  subscribe(listener: ChangeListener): () => void {
    return this.local.subscribe(listener);
  }

  get listenerCount(): number {
    return this.local.listenerCount;
  }

  /** A message from the carrier: another instance's change for this one's listeners. */
  protected received(text: string): void {
    let wire: Wire;
    try {
      wire = JSON.parse(text) as Wire;
    } catch {
      return;
    }
    if (wire.from === this.self || !wire.change || !Array.isArray(wire.change.uuids)) return;
    const { teamId, uuids, listChanged } = wire.change;
    this.local.publish({ teamId: typeof teamId === 'number' ? teamId : null, uuids: uuids.filter((u) => typeof u === 'string').slice(0, 50), ...(listChanged === true ? { listChanged } : {}) });
  }

  protected abstract send(text: string): Promise<void>;
  abstract close(): Promise<void>;
}

/** Redis pub/sub: one connection to publish (commands), one in subscriber mode. */
class RedisChanges extends SharedChanges {
  private readonly pub: RedisClient;
  private readonly sub: RedisClient;

  constructor(url: string, logger: Logger, timeoutMs?: number) {
    super(logger);
    this.pub = redisClient(url, timeoutMs);
    this.sub = redisClient(url, timeoutMs, { subscriber: true });
    // A subscriber connection has no commands to time out; ioredis subscribes again on reconnect.
    this.sub.on('message', (_channel: string, text: string) => this.received(text));
    this.sub.subscribe(CHANGE_CHANNEL).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'changes: could not subscribe on Redis'));
  }

  protected async send(text: string): Promise<void> {
    // Through the Redis health the limiter shares: a publish that times out marks Redis hung for
    // requests too, and while it is hung changes are not sent (best effort) instead of each waiting.
    await redisCall(this.pub, () => this.pub.publish(CHANGE_CHANNEL, text));
  }

  async close(): Promise<void> {
    await this.local.close();
    this.pub.disconnect();
    this.sub.disconnect();
  }
}

/**
 * PostgreSQL LISTEN/NOTIFY: NOTIFY through the store's pool (one statement), LISTEN on a
 * connection of its own, opened again after a loss (changes sent meanwhile are missed: best effort).
 */
class PostgresChanges extends SharedChanges {
  private client: PgClient | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly url: string,
    logger: Logger,
  ) {
    super(logger);
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5_000 });
    const again = () => {
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      if (this.closed || this.retry) return;
      this.retry = setTimeout(() => {
        this.retry = undefined;
        void this.connect();
      }, 1_000);
      this.retry.unref();
    };
    client.on('error', again);
    client.on('end', again);
    client.on('notification', (n) => {
      if (n.channel === CHANGE_CHANNEL && n.payload) this.received(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
      if (this.closed) {
        await client.end();
        return;
      }
      this.client = client;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'changes: could not LISTEN on PostgreSQL; trying again');
      again();
    }
  }

  protected async send(text: string): Promise<void> {
    // NOTIFY's payload is bounded (8000 bytes); a change is a few uuids.
    await sql`select pg_notify(${CHANGE_CHANNEL}, ${text})`.execute(this.db);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.local.close();
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }
}

/** The feed this deployment has: Redis when REDIS_URL is set, else PostgreSQL's when that is the store, else in-process. */
export function openChanges(db: Db, config: { redisUrl: string | null; redisTimeoutMs?: number; databaseUrl: string | null }, logger: Logger): ChangeFeed {
  if (config.redisUrl) return new RedisChanges(config.redisUrl, logger, config.redisTimeoutMs);
  if (config.databaseUrl) return new PostgresChanges(db, config.databaseUrl, logger);
  return new LocalChanges();
}
