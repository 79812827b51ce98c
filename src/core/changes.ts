/**
 * The change feed: what changed, said by the core, the engine watcher and the job runner, and
 * heard by the MCP door's subscriptions (src/mcp/resources/). A change names uuids, not URIs: a
 * berth uuid names one thing, and a subscriber knows the kind it asked for; publishers need not
 * know how the MCP door spells its resources.
 *
 * One port, three carriers (change-feeds.ts): in-process (SQLite: one process), PostgreSQL
 * LISTEN/NOTIFY when the store is PostgreSQL, Redis pub/sub when REDIS_URL is set. Delivery is
 * best effort and at most once: a subscriber that must not miss anything reads the resource again.
 */
export interface Change {
  /** The team whose things changed; null when the publisher does not know it (subscribers then match by uuid only). */
  teamId: number | null;
  /** What changed (at most a few dozen; an audit entry's targets). */
  uuids: string[];
  /** Things of the team came or went (a create or a delete): resources/list_changed. */
  listChanged?: boolean;
}

export type ChangeListener = (change: Change) => void;

export interface ChangePublisher {
  publish(change: Change): void;
}

export interface ChangeFeed extends ChangePublisher {
  /** Hears every change, this instance's and (cross-instance carriers) the others'; returns the idempotent unsubscribe. */
  subscribe(listener: ChangeListener): () => void;
  /** How many listeners are registered (tests and the bench: nothing left behind). */
  readonly listenerCount: number;
  close(): Promise<void>;
}

/** Listeners of this process: every carrier delivers local changes through one of these at once. */
export class LocalChanges implements ChangeFeed {
  private readonly listeners = new Set<ChangeListener>();

  publish(change: Change): void {
    if (change.uuids.length === 0 && !change.listChanged) return;
    for (const l of this.listeners) {
      try {
        l(change);
      } catch {
        // A listener's failure is its own (a closed stream); the others still hear the change.
      }
    }
  }

  subscribe(listener: ChangeListener): () => void {
    // Wrapped so that the same function subscribed twice is two subscriptions.
    const own: ChangeListener = (c) => listener(c);
    this.listeners.add(own);
    return () => void this.listeners.delete(own);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}

/** A feed that goes nowhere (tests and tools that assemble a core without subscribers). */
export const NO_CHANGES: ChangePublisher = { publish: () => {} };

/**
 * At most one publish per key per interval, the last one always sent (a trailing publish when
 * changes came in between): migration progress and deployment logs change many times a second.
 */
export class ChangeThrottle {
  private readonly last = new Map<string, number>();
  private readonly trailing = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly feed: ChangePublisher,
    private readonly intervalMs = 250,
  ) {}

  publish(key: string, change: Change): void {
    const now = Date.now();
    const since = now - (this.last.get(key) ?? 0);
    if (since >= this.intervalMs) {
      this.last.set(key, now);
      this.feed.publish(change);
      return;
    }
    if (this.trailing.has(key)) return;
    const t = setTimeout(() => {
      this.trailing.delete(key);
      this.last.set(key, Date.now());
      this.feed.publish(change);
    }, this.intervalMs - since);
    t.unref();
    this.trailing.set(key, t);
  }

  /** Forgets a key once its thing is done (the map holds only what is in flight). */
  done(key: string, change?: Change): void {
    clearTimeout(this.trailing.get(key));
    this.trailing.delete(key);
    this.last.delete(key);
    if (change) this.feed.publish(change);
  }
}
