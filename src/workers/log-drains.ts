import type { Logger } from 'pino';
import { drainTargets, logDrainSettingsOf, type DrainRecord, type DrainTarget } from '../core/model/log-drains.js';
import type { LogEntry } from '../core/model/container-spec.js';
import type { DrainContainer, Runtime } from '../core/runtime.js';
import type { Db } from '../store/db.js';
import { Periodic } from './periodic.js';
import { ship, type ShipDeps } from './log-drain-ship.js';

export interface LogDrainOptions extends ShipDeps {
  /** This instance's name on the engine watch leases: it ships for the servers it watches. */
  instanceId: string;
  /** How often the settings and each server's running containers are read again. */
  scanMs: number;
  /** How often what was read is sent (Coolify's Fluent Bit flushes every 5 s). */
  flushMs: number;
}

/** Lines kept per provider while it cannot be reached; past it the oldest are dropped (and counted). */
const MAX_QUEUED = 10_000;
const BATCH = 500;
/** A line longer than this is cut: one runaway line does not make a batch no provider takes. */
const MAX_LINE = 64 * 1024;
const MAX_BACKOFF_MS = 60_000;

/**
 * Log drains: berth follows the logs of the resources' containers on each server with a drain
 * turned on, and sends the lines to the providers' ingest APIs itself (no agent on the server).
 * Each server is shipped by the one instance that watches its engine (its engine watch lease),
 * so several berth instances do not send a line twice. Turning a drain off stops its followers
 * at the next scan.
 */
export class LogDrains extends Periodic {
  private readonly drains = new Map<number, ServerDrain>();

  constructor(
    private readonly db: Db,
    private readonly runtime: Runtime,
    logger: Logger,
    private readonly opts: LogDrainOptions,
  ) {
    super(logger, opts.scanMs, 'log drains');
  }

  start(): void {
    this.schedule();
  }

  async tick(): Promise<void> {
    const rows = await this.db
      .selectFrom('servers as s')
      .innerJoin('engine_watch_leases as l', 'l.server_id', 's.id')
      .select(['s.id', 's.name', 's.team_id', 's.log_drains'])
      .where('l.lease_owner', '=', this.opts.instanceId)
      .where('s.log_drains', 'is not', null)
      .execute();
    const wanted = new Map(rows.map((r) => [r.id, { ...r, targets: drainTargets(logDrainSettingsOf(r)) }] as const));
    for (const [id, d] of this.drains) {
      if (wanted.get(id)?.targets.length) continue;
      this.drains.delete(id);
      await d.stop();
    }
    for (const [id, w] of wanted) {
      if (!w.targets.length) continue;
      let d = this.drains.get(id);
      if (!d) this.drains.set(id, (d = new ServerDrain(this.db, this.runtime, this.logger, this.opts, { id, teamId: w.team_id })));
      d.retarget(w.targets, w.name);
      await d.scan().catch((err) => this.logger.debug({ err: (err as Error).message, serverId: id }, 'log drain: could not list containers'));
    }
  }

  override async stop(): Promise<void> {
    await super.stop();
    await Promise.all([...this.drains.values()].map((d) => d.stop()));
    this.drains.clear();
  }
}

/** Where a provider's lines wait, and how long it is left alone after a failure. */
interface Outbox {
  target: DrainTarget;
  queued: DrainRecord[];
  dropped: number;
  failures: number;
  retryAt: number;
  sending: boolean;
}

/** The engine's RFC 3339 (nano) timestamp as nanoseconds: resuming a follow skips what was already read. */
function nanos(ts: string | undefined): bigint | null {
  const m = ts && /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(ts);
  if (!m) return null;
  const secs = Date.parse(`${m[1]}${m[3]}`);
  return Number.isNaN(secs) ? null : BigInt(secs) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
}

/** One server's drain: a follower per running resource container, an outbox per provider. */
class ServerDrain {
  private readonly controller = new AbortController();
  private readonly followers = new Map<string, Promise<void>>();
  /**
   * Per container: the time of the last line read and how many lines carried that time. A follow
   * that reopens (after a restart) starts at that second again, since engines give whole seconds
   * there (podman's timestamps have no fraction): it skips what it already read by that count.
   */
  private readonly lastRead = new Map<string, { at: bigint; n: number }>();
  private readonly outboxes = new Map<string, Outbox>();
  /** Lines from the moment the drain was turned on (Unix seconds): history is not shipped. */
  private readonly since = Math.floor(Date.now() / 1000);
  private readonly timer: NodeJS.Timeout;
  private serverName = '';

  constructor(
    private readonly db: Db,
    private readonly runtime: Runtime,
    private readonly logger: Logger,
    private readonly opts: LogDrainOptions,
    private readonly server: { id: number; teamId: number },
  ) {
    this.timer = setInterval(() => this.flush(), opts.flushMs);
    this.timer.unref();
  }

  /** Takes the current settings: a provider whose settings did not change keeps its queue. */
  retarget(targets: DrainTarget[], serverName: string): void {
    this.serverName = serverName;
    const keys = new Set(targets.map((t) => JSON.stringify(t)));
    for (const k of this.outboxes.keys()) if (!keys.has(k)) this.outboxes.delete(k);
    for (const t of targets) {
      const k = JSON.stringify(t);
      if (!this.outboxes.has(k)) this.outboxes.set(k, { target: t, queued: [], dropped: 0, failures: 0, retryAt: 0, sending: false });
    }
  }

  /** Starts following the resource containers that run now and are not followed yet. */
  async scan(): Promise<void> {
    const signal = this.controller.signal;
    const running = ((await this.runtime.drainContainers(this.server.id, signal)) ?? []).filter((c) => !this.followers.has(c.id));
    if (!running.length || signal.aborted) return;
    // Only the team's own resources placed on this server: a name from the records, never a guess.
    const names = new Map(
      (
        await this.db
          .selectFrom('resources as r')
          .innerJoin('destinations as d', 'd.id', 'r.destination_id')
          .leftJoin('application_destinations as ad', (j) => j.onRef('ad.resource_id', '=', 'r.id').on('ad.server_id', '=', this.server.id))
          .select(['r.uuid', 'r.name'])
          .where('r.team_id', '=', this.server.teamId)
          .where(
            'r.uuid',
            'in',
            running.map((c) => c.resourceUuid),
          )
          .where((eb) => eb.or([eb('d.server_id', '=', this.server.id), eb('ad.server_id', '=', this.server.id)]))
          .execute()
      ).map((r) => [r.uuid, r.name]),
    );
    for (const c of running) {
      const name = names.get(c.resourceUuid);
      if (name === undefined || signal.aborted) continue;
      const f = this.follow(c, name).finally(() => this.followers.delete(c.id));
      this.followers.set(c.id, f);
    }
  }

  /** Follows one container until its stream ends (it stopped); the next scan picks it up again if it runs. */
  private async follow(c: DrainContainer, resourceName: string): Promise<void> {
    const last = this.lastRead.get(c.id);
    const since = last === undefined ? this.since : Math.max(this.since, Number(last.at / 1_000_000_000n));
    const skip = last ? { ...last } : undefined;
    try {
      await this.runtime.followLogs(this.server.id, c.id, {
        since,
        signal: this.controller.signal,
        onEntry: (e) => {
          const at = nanos(e.timestamp);
          if (skip && at !== null && (at < skip.at || (at === skip.at && skip.n-- > 0))) return;
          this.take(c, resourceName, e, at);
        },
      });
    } catch (err) {
      if (!this.controller.signal.aborted) this.logger.debug({ err: (err as Error).message, container: c.name }, 'log drain: follow ended');
    }
  }

  private take(c: DrainContainer, resourceName: string, e: LogEntry, at: bigint | null): void {
    if (at !== null) {
      const last = this.lastRead.get(c.id);
      this.lastRead.set(c.id, last?.at === at ? { at, n: last.n + 1 } : { at, n: 1 });
    }
    const record: DrainRecord = {
      timestamp: e.timestamp ?? new Date().toISOString(),
      line: e.line.length > MAX_LINE ? e.line.slice(0, MAX_LINE) : e.line,
      stream: e.stream,
      container: c.name,
      resource_uuid: c.resourceUuid,
      resource_name: resourceName,
      server_name: this.serverName,
    };
    for (const o of this.outboxes.values()) {
      o.queued.push(record);
      if (o.queued.length > MAX_QUEUED) o.dropped += o.queued.splice(0, o.queued.length - MAX_QUEUED).length;
    }
  }

  /** Sends each provider's queue, one batch at a time; a failing provider backs off alone. */
  private flush(): void {
    for (const o of this.outboxes.values()) {
      if (o.sending || !o.queued.length || Date.now() < o.retryAt) continue;
      o.sending = true;
      void this.send(o).finally(() => (o.sending = false));
    }
  }

  private async send(o: Outbox): Promise<void> {
    while (o.queued.length && !this.controller.signal.aborted && this.outboxes.get(JSON.stringify(o.target)) === o) {
      const batch = o.queued.slice(0, BATCH);
      try {
        await ship(this.opts, o.target, batch);
      } catch (err) {
        o.failures++;
        o.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (o.failures - 1));
        // The provider and its answer only: the keys and the tenant's URL stay out of the log.
        this.logger.warn({ serverId: this.server.id, provider: o.target.provider, failures: o.failures, err: (err as Error).message }, 'log drain: could not ship');
        return;
      }
      o.queued.splice(0, batch.length);
      if (o.failures || o.dropped) this.logger.info({ serverId: this.server.id, provider: o.target.provider, dropped: o.dropped }, 'log drain: shipping again');
      o.failures = 0;
      o.dropped = 0;
    }
  }

  async stop(): Promise<void> {
    this.controller.abort();
    clearInterval(this.timer);
    this.outboxes.clear();
    await Promise.all(this.followers.values());
  }
}
