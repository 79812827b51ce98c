import type { Logger } from 'pino';
import { reachesEngine, SERVER_ENGINE_COLUMNS, type ServerEngine } from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import type { EngineClient } from './engine-client.js';
import { NotFoundError } from './engine-errors.js';
import { OutageLog } from '../logging/outage.js';
import { aggregate, MISSING, observeContainer, UNREACHABLE_STATUS, type ContainerObservation } from '../core/observed-status.js';
import { containerNames, engineKindOf, LABEL_MANAGED, LABEL_RESOURCE, planResource } from './plan.js';
import { kindFor } from './kinds.js';
import type { ContainerInspect } from '../core/model/container-spec.js';
import { NO_CHANGES, type ChangePublisher } from '../core/changes.js';
import { copyRows, observeCopy, type WatchedCopy } from './additional-destinations.js';

export interface WatcherOptions {
  /** This instance's name on the leases it holds. */
  instanceId: string;
  /** How long a server's watch lease lasts unless renewed (renewed every third). */
  leaseMs: number;
  /** A full look at every resource of a watched server, besides the events. */
  reconcileMs: number;
  /** Where a changed observation is said (the MCP door's subscriptions). */
  changes?: ChangePublisher;
}

import { berthRunsHealthchecks } from './standalone/healthchecks.js';

/** A resource row as the watcher needs it. */
interface Watched {
  id: number;
  uuid: string;
  kind: string;
  config: string;
  status: string;
  destination_id: number;
  last_exit_code: number | null;
  team_id: number;
  observed_status: string | null;
  restart_count: number | null;
  destination_type: string;
}

const RESOURCE_COLUMNS = [
  'r.id',
  'r.uuid',
  'r.kind',
  'r.config',
  'r.status',
  'r.destination_id',
  'r.last_exit_code',
  'r.team_id',
  'r.observed_status',
  'r.restart_count',
  'd.type as destination_type',
] as const;

/**
 * Observes resources on their engines and writes what it sees into the store, so a read of a
 * resource costs no engine call. Per server, one instance holds a lease and follows the engine's
 * events (over whatever transport reaches it, SSH included), with a periodic full look as a safety
 * net; it also runs the health checks podman does not run by itself. Any instance can observe one
 * resource on demand (after an action).
 */
export class EngineWatchers {
  private readonly watching = new Map<number, ServerWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;
  private readonly outage: OutageLog;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly engineFor: (server: ServerEngine) => Promise<EngineClient>,
    private readonly opts: WatcherOptions,
  ) {
    this.outage = new OutageLog(logger, 'engine watchers', 'warn');
  }

  start(): void {
    this.stopped = false;
    const tick = () => {
      this.ticking ??= this.tick()
        .then(
          () => this.outage.ok(),
          (err) => this.outage.failed(err),
        )
        .finally(() => (this.ticking = undefined));
    };
    tick();
    this.timer = setInterval(tick, Math.max(200, Math.floor(this.opts.leaseMs / 3)));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    const ids = [...this.watching.keys()];
    await Promise.all([...this.watching.values()].map((w) => w.stop()));
    this.watching.clear();
    if (ids.length) {
      await this.db
        .updateTable('engine_watch_leases')
        .set({ lease_until: 0 })
        .where('lease_owner', '=', this.opts.instanceId)
        .where('server_id', 'in', ids)
        .execute()
        .catch(() => undefined);
    }
  }

  /** Claims the servers nobody watches, renews the ones this instance watches, drops the rest. */
  private async tick(): Promise<void> {
    // Managed servers: reachable and validated. One whose last validate failed is not followed
    // (retrying it would only knock on its sshd); the next successful validate brings it in.
    const servers = (
      await this.db
        .selectFrom('servers')
        .select([...SERVER_ENGINE_COLUMNS, 'updated_at', 'is_usable'])
        .execute()
    ).filter((s) => reachesEngine(s) && s.is_usable === 1);
    const live = new Map(servers.map((s) => [s.id, s]));
    const until = Date.now() + this.opts.leaseMs;
    for (const [id, w] of this.watching) {
      const s = live.get(id);
      // Gone, no longer reachable, or changed (another endpoint, key or host key): start over.
      if (!s || s.updated_at !== w.version) {
        this.watching.delete(id);
        await w.stop();
        await this.db.updateTable('engine_watch_leases').set({ lease_until: 0 }).where('server_id', '=', id).where('lease_owner', '=', this.opts.instanceId).execute();
        continue;
      }
      const renewed = await this.db.updateTable('engine_watch_leases').set({ lease_until: until }).where('server_id', '=', id).where('lease_owner', '=', this.opts.instanceId).executeTakeFirst();
      if (renewed.numUpdatedRows === 0n) {
        // Another instance took it over (this one could not reach the store for a whole lease).
        this.watching.delete(id);
        await w.stop();
      }
    }
    if (this.stopped) return;
    for (const s of servers) {
      if (this.watching.has(s.id) || !(await this.claim(s.id, until))) continue;
      if (this.stopped) return;
      // The record is read afresh for each connection: a stale one (say, an old pinned host key)
      // would replace the shared cached client that actions of the new record are using.
      const w = new ServerWatcher(this.db, this.logger, s, s.updated_at, () => this.currentEngine(s.id), this.opts.reconcileMs, this.opts.changes ?? NO_CHANGES);
      this.watching.set(s.id, w);
      w.start();
    }
  }

  private async currentEngine(serverId: number): Promise<EngineClient> {
    const s = await this.db
      .selectFrom('servers')
      .select([...SERVER_ENGINE_COLUMNS])
      .where('id', '=', serverId)
      .executeTakeFirstOrThrow();
    if (!reachesEngine(s)) throw new Error('The server is no longer managed.');
    return this.engineFor(s);
  }

  /** One winner per server: a new lease row, or one whose lease ran out. */
  private async claim(serverId: number, until: number): Promise<boolean> {
    const taken = await this.db
      .updateTable('engine_watch_leases')
      .set({ lease_owner: this.opts.instanceId, lease_until: until })
      .where('server_id', '=', serverId)
      .where((eb) => eb.or([eb('lease_until', '<', Date.now()), eb('lease_owner', '=', this.opts.instanceId)]))
      .executeTakeFirst();
    if (taken.numUpdatedRows > 0n) return true;
    const inserted = await this.db
      .insertInto('engine_watch_leases')
      .values({ server_id: serverId, lease_owner: this.opts.instanceId, lease_until: until })
      .onConflict((oc) => oc.column('server_id').doNothing())
      .executeTakeFirst();
    return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /** Looks at one resource's containers now and stores what the engine says; the status written. */
  async observeResource(resourceId: number, engine: EngineClient): Promise<string> {
    const r = await this.db
      .selectFrom('resources as r')
      .innerJoin('destinations as d', 'd.id', 'r.destination_id')
      .select([...RESOURCE_COLUMNS])
      .where('r.id', '=', resourceId)
      .executeTakeFirstOrThrow();
    return (await observeAndStore(this.db, engine, r, new Map(), this.opts.changes ?? NO_CHANGES)).status;
  }
}

/** Inspects a resource's planned containers and writes the result; the status written. */
async function observeAndStore(
  db: Db,
  engine: EngineClient,
  r: Watched,
  dieCodes: Map<string, number>,
  changes: ChangePublisher,
  signal?: AbortSignal,
): Promise<{ status: string; containers: Record<string, ContainerObservation>; inspects: Map<string, ContainerInspect> }> {
  const wanted = r.status === 'running' ? 'running' : 'exited';
  const containers: Record<string, ContainerObservation> = {};
  const inspects = new Map<string, ContainerInspect>();
  // Standalone containers are looked at here (with the die events' exit codes); another kind
  // (Swarm's tasks) looks for itself, from its plan.
  const kind = engineKindOf(r.destination_type);
  const byKind = kind === 'standalone' ? null : await kindFor(kind).observe(engine, await planResource(db, r.id), wanted, signal);
  for (const name of byKind ? [] : containerNames(r)) {
    let info: ContainerInspect | undefined;
    try {
      info = await engine.inspectContainer(name, { signal });
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    if (info) inspects.set(name, info);
    const o = info ? observeContainer(info, wanted) : { ...MISSING };
    // A running (restarting) container's ExitCode is not its last exit: the die event's is.
    if (o.exit_code === null && o.restarts > 0 && dieCodes.has(name)) o.exit_code = dieCodes.get(name)!;
    containers[name] = o;
  }
  const seen = byKind ?? aggregate(containers, r.last_exit_code);
  await db
    .updateTable('resources')
    .set({ observed_status: seen.status, observed: JSON.stringify(seen.containers), observed_at: nowIso(), restart_count: seen.restart_count, last_exit_code: seen.last_exit_code })
    .where('id', '=', r.id)
    // Moved by a migration meanwhile: what was seen here is not about where it lives now.
    .where('destination_id', '=', r.destination_id)
    .where('deleting', 'is', null)
    .execute();
  // Only what a reader would see differently (observed_at moves at every look, and is not news).
  if (seen.status !== r.observed_status || seen.restart_count !== (r.restart_count ?? 0) || seen.last_exit_code !== r.last_exit_code) {
    changes.publish({ teamId: r.team_id, uuids: [r.uuid] });
  }
  return { status: seen.status, containers: byKind ? {} : containers, inspects };
}

/** How soon after an event the resource is looked at: a burst of events costs one look. */
const EVENT_DEBOUNCE_MS = 100;
const HEALTH_TICK_MS = 500;
const DEFAULT_HEALTH_INTERVAL_MS = 30_000;

/** Follows one server's engine. */
class ServerWatcher {
  private readonly controller = new AbortController();
  private loop: Promise<void> | undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private readonly pending = new Map<string, NodeJS.Timeout>();
  private readonly dieCodes = new Map<string, number>();
  /** Containers with a health check berth runs (podman): when each is due next. */
  private readonly healthDue = new Map<string, { uuid: string; everyMs: number; next: number }>();
  private runsHealthchecks = false;
  private unreachable = false;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly server: ServerEngine,
    readonly version: string,
    private readonly engine: () => Promise<EngineClient>,
    private readonly reconcileMs: number,
    private readonly changes: ChangePublisher,
  ) {}

  start(): void {
    this.loop = this.follow();
    this.reconcileTimer = setInterval(() => void this.reconcile().catch(() => undefined), this.reconcileMs);
    this.reconcileTimer.unref();
    this.healthTimer = setInterval(() => void this.runDueHealthchecks().catch(() => undefined), HEALTH_TICK_MS);
    this.healthTimer.unref();
  }

  async stop(): Promise<void> {
    this.controller.abort();
    clearInterval(this.reconcileTimer);
    clearInterval(this.healthTimer);
    for (const t of this.pending.values()) clearTimeout(t);
    await this.loop;
  }

  /** Events until the stream ends, then again; a full look each time it (re)opens. */
  private async follow(): Promise<void> {
    const signal = this.controller.signal;
    let backoff = 500;
    while (!signal.aborted) {
      let opened = false;
      try {
        const engine = await this.engine();
        if (!this.runsHealthchecks) {
          this.runsHealthchecks = berthRunsHealthchecks(await engine.version({ signal }));
        }
        await engine.events({
          labels: { [LABEL_MANAGED]: 'true' },
          signal,
          onOpen: () => {
            opened = true;
            backoff = 500;
            void this.reconcile().catch(() => undefined);
          },
          onEvent: (e) => {
            const attrs = e.Actor?.Attributes ?? {};
            const uuid = attrs[LABEL_RESOURCE];
            if (!uuid) return;
            const code = attrs.exitCode ?? attrs.containerExitCode;
            if ((e.Action ?? e.status) === 'die' && attrs.name && code !== undefined) this.dieCodes.set(attrs.name, Number(code));
            this.soon(uuid);
          },
        });
      } catch (err) {
        if (signal.aborted) return;
        this.logger.debug({ err: (err as Error).message, serverId: this.server.id }, 'engine events stream failed');
        // A stream that dropped is reopened at once; only an engine that cannot be reached again
        // makes its resources say so (a short hiccup does not flip every row).
        if (opened) {
          await new Promise((r) => setTimeout(r, 100).unref());
          continue;
        }
        await this.markUnreachable().catch(() => undefined);
      }
      if (signal.aborted) return;
      await new Promise((r) => setTimeout(r, backoff).unref());
      backoff = Math.min(backoff * 2, 10_000);
    }
  }

  /** Looks at a resource shortly (events come in bursts: die, cleanup, start, ...). */
  private soon(uuid: string): void {
    if (this.pending.has(uuid)) return;
    const t = setTimeout(() => {
      this.pending.delete(uuid);
      void this.observeUuid(uuid).catch(() => undefined);
    }, EVENT_DEBOUNCE_MS);
    t.unref();
    this.pending.set(uuid, t);
  }

  private resources() {
    return this.db
      .selectFrom('resources as r')
      .innerJoin('destinations as d', 'd.id', 'r.destination_id')
      .select([...RESOURCE_COLUMNS])
      .where('d.server_id', '=', this.server.id)
      .where('r.deleting', 'is', null);
  }

  /** An application's copies on this server (additional destinations): followed as its own resources are. */
  private copies() {
    return copyRows(this.db).where('a.server_id', '=', this.server.id);
  }

  private async observeUuid(uuid: string): Promise<void> {
    const r = await this.resources().where('r.uuid', '=', uuid).executeTakeFirst();
    if (r) return this.observe(r, await this.engine());
    const c = await this.copies().where('r.uuid', '=', uuid).executeTakeFirst();
    if (c) await this.observeCopy(c, await this.engine());
  }

  /** A copy's status is stored on its row; a change is news for the application. */
  private async observeCopy(c: WatchedCopy, engine: EngineClient): Promise<void> {
    const status = await observeCopy(this.db, engine, c, this.controller.signal);
    this.unreachable = false;
    if (status !== c.observed_status) this.changes.publish({ teamId: c.team_id, uuids: [c.uuid] });
  }

  private async observe(r: Watched, engine: EngineClient): Promise<void> {
    const seen = await observeAndStore(this.db, engine, r, this.dieCodes, this.changes, this.controller.signal);
    this.unreachable = false;
    if (!this.runsHealthchecks) return;
    // Keep the health-check schedule in step with what the containers declare.
    for (const [name, o] of Object.entries(seen.containers)) {
      if (o.health === null || o.state !== 'running') {
        this.healthDue.delete(name);
        continue;
      }
      if (!this.healthDue.has(name)) {
        const every = Number((seen.inspects.get(name)?.Config as { Healthcheck?: { Interval?: number } } | undefined)?.Healthcheck?.Interval ?? 0) / 1e6 || DEFAULT_HEALTH_INTERVAL_MS;
        this.healthDue.set(name, { uuid: r.uuid, everyMs: every, next: Date.now() + every });
      }
    }
  }

  /** Every resource of the server, looked at now. */
  private async reconcile(): Promise<void> {
    const engine = await this.engine();
    const rows = await this.resources().execute();
    for (const r of rows) {
      if (this.controller.signal.aborted) return;
      await this.observe(r, engine);
    }
    for (const c of await this.copies().execute()) {
      if (this.controller.signal.aborted) return;
      await this.observeCopy(c, engine);
    }
  }

  private async runDueHealthchecks(): Promise<void> {
    if (!this.runsHealthchecks || this.healthDue.size === 0) return;
    const engine = await this.engine();
    const now = Date.now();
    for (const [name, h] of this.healthDue) {
      if (h.next > now) continue;
      h.next = now + h.everyMs;
      try {
        await engine.runHealthcheck(name, { signal: this.controller.signal });
      } catch (err) {
        if (err instanceof NotFoundError) this.healthDue.delete(name);
      }
      this.soon(h.uuid);
    }
  }

  /** The server cannot be reached: its resources say so instead of keeping their last word. */
  private async markUnreachable(): Promise<void> {
    if (this.unreachable) return;
    this.unreachable = true;
    const copies = await this.copies().execute();
    if (copies.length) {
      await this.db.updateTable('application_destinations').set({ observed_status: UNREACHABLE_STATUS }).where('server_id', '=', this.server.id).execute();
      for (const c of copies) if (c.observed_status !== UNREACHABLE_STATUS) this.changes.publish({ teamId: c.team_id, uuids: [c.uuid] });
    }
    const rows = await this.resources().execute();
    if (!rows.length) return;
    await this.db
      .updateTable('resources')
      .set({ observed_status: UNREACHABLE_STATUS })
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    for (const r of rows) if (r.observed_status !== UNREACHABLE_STATUS) this.changes.publish({ teamId: r.team_id, uuids: [r.uuid] });
  }
}
