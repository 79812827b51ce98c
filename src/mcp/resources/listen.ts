import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server';
import type { ChangeFeed } from '../../core/changes.js';
import { BerthError } from '../../errors.js';
import { uuidOfUri } from './kinds.js';

/** Who opened one HTTP subscriptions/listen stream, and how to end it. */
export interface ListenStream {
  teamId: number;
  tokenId: number;
  /** The URIs it follows, each already read under its token (listen-check.ts). */
  uris: readonly string[];
  /** Authenticates its token again (the request's credentials): throws once it is revoked or expired. */
  recheck(): Promise<{ teamId: number }>;
  /** Ends the HTTP response (the SDK's listen router then tears the stream down). */
  end(): void;
}

/** Open streams per token at most (each holds an SSE connection and a feed listener). */
export const MAX_STREAMS_PER_TOKEN = 16;
/** How often the tokens of open streams are authenticated again (a revocation ends them within this). */
export const RECHECK_MS = 10_000;

/**
 * The ServerEventBus of the /mcp handler's listen router, over berth's change feed. The SDK's
 * router filters events by URI only and would hand resources_list_changed to every stream; this
 * bus gives each stream only its team's changes: the stream's identity comes from the request
 * that opened it (an AsyncLocalStorage around the handler: the router subscribes synchronously
 * while serving that request). A subscribe without one hears nothing (fail closed).
 */
export class ListenBus implements ServerEventBus {
  private readonly context = new AsyncLocalStorage<ListenStream>();
  private readonly open = new Map<ListenStream, () => void>();
  private readonly perToken = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly feed: ChangeFeed) {}

  /** Runs the handler for one listen request with its stream's identity. */
  serving<T>(stream: ListenStream, run: () => Promise<T>): Promise<T> {
    return this.context.run(stream, run);
  }

  streamsOf(tokenId: number): number {
    return this.perToken.get(tokenId) ?? 0;
  }

  get openCount(): number {
    return this.open.size;
  }

  /** berth publishes on its change feed, never through the SDK's notifier. */
  publish(_event: ServerEvent): void {}

  subscribe(listener: (event: ServerEvent) => void): () => void {
    const stream = this.context.getStore();
    if (!stream) return () => {};
    const follows = new Map<string, string[]>();
    for (const uri of stream.uris) {
      const uuid = uuidOfUri(uri);
      if (uuid !== undefined) follows.set(uuid, [...(follows.get(uuid) ?? []), uri]);
    }
    const stopFeed = this.feed.subscribe((change) => {
      if (change.teamId !== null && change.teamId !== stream.teamId) return;
      if (change.listChanged && change.teamId === stream.teamId) listener({ kind: 'resources_list_changed' });
      for (const uuid of change.uuids) for (const uri of follows.get(uuid) ?? []) listener({ kind: 'resource_updated', uri });
    });
    let live = true;
    const unsubscribe = () => {
      if (!live) return;
      live = false;
      stopFeed();
      this.open.delete(stream);
      const n = (this.perToken.get(stream.tokenId) ?? 1) - 1;
      if (n > 0) this.perToken.set(stream.tokenId, n);
      else this.perToken.delete(stream.tokenId);
      if (this.open.size === 0) this.stopTimer();
    };
    this.open.set(stream, unsubscribe);
    this.perToken.set(stream.tokenId, this.streamsOf(stream.tokenId) + 1);
    this.startTimer();
    return unsubscribe;
  }

  /**
   * Every open stream's token authenticated again, once per token: a revoked or expired token,
   * or one moved to another team, ends its streams (their clients reconnect and are refused).
   */
  async recheck(): Promise<void> {
    const byToken = new Map<number, ListenStream[]>();
    for (const s of this.open.keys()) byToken.set(s.tokenId, [...(byToken.get(s.tokenId) ?? []), s]);
    for (const streams of byToken.values()) {
      let ok: boolean;
      try {
        ok = (await streams[0]!.recheck()).teamId === streams[0]!.teamId;
      } catch (err) {
        // A store that does not answer is no revocation: the next round decides.
        if (!(err instanceof BerthError) || err.kind === 'store_unavailable') continue;
        ok = false;
      }
      if (!ok) for (const s of streams) this.close(s);
    }
  }

  private close(s: ListenStream): void {
    this.open.get(s)?.();
    s.end();
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.recheck().catch(() => undefined), RECHECK_MS);
    this.timer.unref();
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Ends every stream (the server closes). */
  closeAll(): void {
    for (const s of [...this.open.keys()]) this.close(s);
    this.stopTimer();
  }
}
