import type { ChangeFeed } from '../../core/changes.js';
import { uuidOfUri } from './kinds.js';

/**
 * The URIs one live connection (stdio) follows: those of 2025 resources/subscribe, and those of
 * each open 2026 subscriptions/listen (by its request id, until cancelled). Every URI here was
 * read under the connection's token before it was added, so a change naming its uuid is the
 * connection's to hear.
 */
export class LiveSubscriptions {
  readonly subscribed = new Set<string>();
  readonly listens = new Map<string | number, string[]>();
  /** Most URIs one connection follows at once (each listen's and subscribe's together). */
  static readonly MAX_URIS = 1_000;

  get size(): number {
    let n = this.subscribed.size;
    for (const uris of this.listens.values()) n += uris.length;
    return n;
  }

  /** The URIs that wait on this uuid. */
  private urisOf(uuids: ReadonlySet<string>): Set<string> {
    const out = new Set<string>();
    const add = (uri: string) => {
      const u = uuidOfUri(uri);
      if (u !== undefined && uuids.has(u)) out.add(uri);
    };
    for (const uri of this.subscribed) add(uri);
    for (const uris of this.listens.values()) for (const uri of uris) add(uri);
    return out;
  }

  /** Hears the feed for this connection's team; returns the unsubscribe. */
  follow(feed: ChangeFeed, teamId: number, send: { updated(uri: string): void; listChanged(): void }): () => void {
    return feed.subscribe((change) => {
      if (change.teamId !== null && change.teamId !== teamId) return;
      if (change.listChanged && change.teamId === teamId) send.listChanged();
      if (this.subscribed.size === 0 && this.listens.size === 0) return;
      for (const uri of this.urisOf(new Set(change.uuids))) send.updated(uri);
    });
  }
}
