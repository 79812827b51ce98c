import { sql } from 'kysely';
import type { Logger } from 'pino';
import {
  reachesEngine,
  recordOnlyRuntime,
  type ApplicationImage,
  type DrainContainer,
  type BackupOutcome,
  type Orphans,
  type RemoveOptions,
  type MigrationJobContext,
  type MovedVolumes,
  type Runtime,
  type RuntimeJobContext,
  type ServerEngine,
  type ValidationResult,
} from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import type { EngineClient } from './engine-client.js';
import { NotFoundError } from './engine-errors.js';
import { loadEngineModules } from './engine-modules.js';
import { planRefusal, planResource, type Plan } from './plan.js';
import { EngineWatchers } from './engine-watcher.js';
import type { SshTuning } from './connections.js';
import { TargetGuard } from '../core/outbound-guard.js';
import type { ChangePublisher } from '../core/changes.js';
import { execTask, taskContainer } from './task-exec.js';
import { carryBuiltImage, copyOf, observeCopyOf } from './additional-destinations.js';
import { proxyState, syncProxy } from './proxy.js';
import { DEFAULT_PROXY_IMAGE } from '../core/model/proxy.js';
import { DEFAULT_BUILDPACK_IMAGES, type BuildpackImages } from '../config/config.js';
import type { KindContext } from './kind.js';
import { kindFor } from './kinds.js';
import { DEPLOY_READY_TIMEOUT_MS } from './standalone/readiness.js';
import { type RuntimeParts, serverById, serverByIdOrThrow, serverOfResource } from './runtime-rows.js';
import { applicationImages, buildIfNeeded, pruneImages, useRollbackImage } from './builds.js';
import { discardStaging, moveVolumes, removeMigrationHelpers } from './migration-moves.js';
import { removeBackupFiles, restoreBackup, runBackup, runVolumeBackup } from './backups.js';
import { dockerCleanup, orphans, removeLeftovers, removeResource } from './removal.js';
import { followLogs, resourceContainers } from './log-follow.js';
import type { LogEntry } from '../core/model/container-spec.js';
import { removePreview, runPreviewDeployment } from './previews.js';

/**
 * The runtime that acts on real Docker-compatible engines: validates servers, turns deployments
 * into containers matching the records (replacing old ones, never touching volumes), moves volume
 * data for migrations, and reads logs. Servers registered without an engine endpoint are not
 * managed: for them it keeps the records only, and says so.
 *
 * It dispatches: the records are read in runtime-rows.ts, a plan's workloads are run by its engine
 * kind (kinds.ts; standalone/ today), and builds, backups, migration copies and removal are their
 * own modules, which share what this class holds through RuntimeParts.
 */
export class LiveRuntime implements Runtime {
  private connections: Promise<import('./connections.js').EngineConnections> | undefined;
  private readonly parts: RuntimeParts;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    /** Image for the helper containers of a volume copy. */
    helperImage: string,
    /** Also compare every file's sha256 after a volume copy (see copyVolume's `checksums`). */
    checksums = false,
    private readonly ssh: SshTuning = {},
    /** Where a team's git repositories may be fetched from (the outbound guard). */
    outbound: TargetGuard = new TargetGuard(''),
    /** The engine watcher's lease and full-look intervals. */
    private readonly watch: { leaseMs: number; reconcileMs: number; changes?: ChangePublisher } = { leaseMs: 15_000, reconcileMs: 15_000 },
    /** The base images of generated builds (nixpacks, static). */
    buildpackImages: BuildpackImages = DEFAULT_BUILDPACK_IMAGES,
    /** The proxy's image when a server's proxy configuration names none (BERTH_PROXY_IMAGE). */
    private readonly proxyImage = DEFAULT_PROXY_IMAGE,
  ) {
    this.parts = {
      db,
      logger,
      helperImage,
      checksums,
      outbound,
      buildpackImages,
      engineFor: (server) => this.engineFor(server),
      liveEngineOf: (serverId) => this.liveEngineOf(serverId),
      liveEngineOfResource: async (resourceId) => {
        const server = await serverOfResource(this.db, resourceId);
        return this.isLive(server) ? this.engineFor(server) : undefined;
      },
      routeProxy: (serverId, log) => this.routeProxy(serverId, log),
    };
  }

  async syncProxy(serverId: number, opts: { start?: boolean; recreate?: boolean; signal?: AbortSignal; log?: (line: string) => Promise<void> } = {}): Promise<void> {
    const engine = await this.liveEngineOf(serverId);
    if (engine) await syncProxy(this.db, engine, serverId, { ...opts, signal: opts.signal ?? AbortSignal.timeout(DEPLOY_READY_TIMEOUT_MS), defaultImage: this.proxyImage });
  }

  async proxyStatus(serverId: number): Promise<string | null> {
    const engine = await this.liveEngineOf(serverId);
    return engine ? proxyState(engine, AbortSignal.timeout(30_000)) : null;
  }

  async drainContainers(serverId: number, signal?: AbortSignal): Promise<DrainContainer[] | null> {
    const engine = await this.liveEngineOf(serverId);
    return engine ? resourceContainers(engine, signal) : null;
  }

  async followLogs(serverId: number, containerId: string, opts: { since: number; signal: AbortSignal; onEntry: (e: LogEntry) => void }): Promise<void> {
    const engine = await this.liveEngineOf(serverId);
    if (engine) await followLogs(engine, containerId, opts);
  }

  /** After a deployment or a removal: the server's proxy routes what the records now say; a proxy that fails is said, never fails the work. */
  private async routeProxy(serverId: number, log?: (line: string) => Promise<void>): Promise<void> {
    try {
      await this.syncProxy(serverId, { log });
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, serverId }, 'could not update the proxy');
      await log?.(`could not update the proxy: ${(err as Error).message}`).catch(() => undefined);
    }
  }

  isLive(server: ServerEngine): boolean {
    return reachesEngine(server);
  }

  private conns() {
    return (this.connections ??= loadEngineModules().then((m) => new m.connections.EngineConnections(this.db, this.logger, this.ssh)));
  }

  /** The server's engine client (unix, TCP or SSH), reused while the record is unchanged. */
  async engineFor(server: ServerEngine): Promise<EngineClient> {
    return (await this.conns()).engineFor(server);
  }

  async engineForServerId(serverId: number): Promise<EngineClient> {
    return await this.engineFor(await serverByIdOrThrow(this.db, serverId));
  }

  /** A server's engine when berth manages it; undefined when the server is gone or record-only. */
  private async liveEngineOf(serverId: number): Promise<EngineClient | undefined> {
    const server = await serverById(this.db, serverId);
    return server && this.isLive(server) ? this.engineFor(server) : undefined;
  }

  async validateServer(server: ServerEngine, opts: { acceptHostKey?: boolean } = {}): Promise<ValidationResult> {
    return (await this.conns()).validate(server, opts);
  }

  /** What a kind's work may say and when it must give up, with berth's own log for its warnings. */
  private kindContext(log: (line: string) => Promise<void>, signal: AbortSignal): KindContext {
    return { log, signal, warn: (fields, message) => this.logger.warn(fields, message) };
  }

  async runDeployment(deploymentId: number, ctx: RuntimeJobContext): Promise<'finished' | 'failed'> {
    const d = await ctx.db.selectFrom('deployments').selectAll().where('id', '=', deploymentId).executeTakeFirstOrThrow();
    // A pull request's preview runs beside the application, under its own names (previews.ts).
    if (d.pull_request_id > 0) {
      if (!this.isLive(await serverOfResource(this.db, d.resource_id))) return recordOnlyRuntime.runDeployment(deploymentId, ctx);
      return runPreviewDeployment(this.parts, d, ctx, this.kindContext(ctx.log, ctx.signal));
    }
    const copy = await copyOf(ctx.db, d); // additional destinations: a copy's deployment runs on its own server
    if (!this.isLive(copy?.server ?? (await serverOfResource(this.db, d.resource_id)))) return recordOnlyRuntime.runDeployment(deploymentId, ctx);
    if (copy) await carryBuiltImage(ctx.db, d.resource_id, await this.engineFor(copy.server), async () => this.engineFor(await serverOfResource(this.db, d.resource_id)), ctx.log, ctx.signal);
    else if (d.rollback_tag) await useRollbackImage(this.parts, d.resource_id, d.rollback_tag, ctx);
    else await buildIfNeeded(this.parts, d, ctx);
    const plan = await planResource(ctx.db, d.resource_id, copy ? { destinationId: copy.destinationId } : {});
    const engine = await this.engineForServerId(plan.serverId);
    const kind = kindFor(plan.engineKind);
    const kctx = this.kindContext(ctx.log, ctx.signal);
    // What berth wants comes first: the watcher reads a container that is down while the
    // resource should run as restarting, and as exited once it should be stopped.
    // A resource never seen on this engine (just created, or just moved here) is not running until
    // the engine says so: its status must not read `running` while its start is still under way.
    const want = async (status: 'running' | 'exited') =>
      // additional destinations: the application's wanted status is the primary's deployment's to set
      copy
        ? undefined
        : ctx.db.updateTable('resources').set({ status, observed_status: sql<string>`coalesce(observed_status, 'exited')`, updated_at: nowIso() }).where('id', '=', d.resource_id).execute();
    try {
      switch (d.kind) {
        case 'stop':
          await want('exited');
          await kind.stop(engine, plan, kctx);
          return 'finished';
        case 'start':
          await want('running');
          await kind.start(engine, plan, kctx);
          return 'finished';
        case 'restart': {
          if (d.force === 1) {
            // Coolify's restart?latest=true: pull every image before anything stops (a failed
            // pull leaves it running as it was), then recreate the containers from them.
            for (const image of new Set(plan.containers.map((c) => c.spec.image))) {
              await engine.pullImage(image, { signal: ctx.signal });
              await ctx.log(`pulled ${image}`);
            }
            break;
          }
          await want('running');
          // False when something is missing (one that kept restarting is removed by the stop): deployed below.
          if (await kind.restart(engine, plan, kctx)) return 'finished';
          break;
        }
      }
      await want('running');
      await kind.deploy(engine, plan, kctx);
      if (d.kind === 'deploy' && !copy) await pruneImages(engine, d.resource_id, ctx).catch((err) => ctx.log(`could not remove old images: ${(err as Error).message}`));
      return 'finished';
    } finally {
      await (copy ? observeCopyOf(ctx.db, engine, d.resource_id, copy.destinationId) : this.observeOn(engine, d.resource_id)).catch((err) =>
        this.logger.debug({ err: (err as Error).message }, 'could not observe after a deployment'),
      );
      // The records are the routes: a deploy, start or restart (re)joins the proxy with its domains
      // (a copy's: its own server's proxy).
      if (d.kind !== 'stop') await this.routeProxy(plan.serverId, ctx.log);
    }
  }

  private watchers: EngineWatchers | undefined;

  private watchersOf(instanceId = 'on-demand'): EngineWatchers {
    return (this.watchers ??= new EngineWatchers(this.db, this.logger, (s) => this.engineFor(s), { instanceId, ...this.watch }));
  }

  startWatching(instanceId: string): void {
    void this.watchers?.stop();
    this.watchers = undefined;
    this.watchersOf(instanceId).start();
  }

  async stopWatching(): Promise<void> {
    await this.watchers?.stop();
  }

  private observeOn(engine: EngineClient, resourceId: number): Promise<string> {
    return this.watchersOf().observeResource(resourceId, engine);
  }

  async placementRefusal(resourceId: number, destinationId: number): Promise<string | null> {
    return planRefusal(await planResource(this.db, resourceId, { destinationId }));
  }

  async observeResource(resourceId: number): Promise<string | null> {
    const server = await serverOfResource(this.db, resourceId);
    if (!this.isLive(server)) return null;
    return this.observeOn(await this.engineFor(server), resourceId);
  }

  applicationImages(resourceId: number): Promise<ApplicationImage[] | null> {
    return applicationImages(this.parts, resourceId);
  }

  async serviceContainer(resourceId: number, container: string, action: 'start' | 'stop' | 'restart'): Promise<string> {
    if (!this.isLive(await serverOfResource(this.db, resourceId))) return recordOnlyRuntime.serviceContainer(resourceId, container, action);
    const plan = await planResource(this.db, resourceId);
    const c = plan.containers.find((k) => k.spec.labels?.['berth.container'] === container);
    if (!c) throw new Error(`The service has no container ${container}.`);
    const engine = await this.engineForServerId(plan.serverId);
    const kind = kindFor(plan.engineKind);
    const one: Plan = { ...plan, containers: [c] };
    const ctx = this.kindContext(async () => undefined, AbortSignal.timeout(DEPLOY_READY_TIMEOUT_MS + 60_000));
    try {
      if (action !== 'start') await kind.stop(engine, one, ctx);
      // Start deploys the container when it is missing.
      if (action !== 'stop') await kind.start(engine, one, ctx);
    } catch (err) {
      if (err instanceof NotFoundError) throw new Error(`The container ${c.name} does not exist on the server: deploy the service first.`);
      throw err;
    } finally {
      await this.observeOn(engine, resourceId).catch(() => undefined);
    }
    return `${c.name} ${action === 'stop' ? 'stopped' : action === 'start' ? 'started' : 'restarted'}`;
  }

  async startResource(resourceId: number, signal?: AbortSignal): Promise<void> {
    if (!this.isLive(await serverOfResource(this.db, resourceId))) return;
    const plan = await planResource(this.db, resourceId);
    const engine = await this.engineForServerId(plan.serverId);
    try {
      await kindFor(plan.engineKind).start(
        engine,
        plan,
        this.kindContext(async () => undefined, signal ?? new AbortController().signal),
      );
    } finally {
      await this.observeOn(engine, resourceId).catch(() => undefined);
    }
  }

  async stopResource(resourceId: number, signal?: AbortSignal): Promise<void> {
    if (!this.isLive(await serverOfResource(this.db, resourceId))) return;
    const plan = await planResource(this.db, resourceId);
    const engine = await this.engineForServerId(plan.serverId);
    await kindFor(plan.engineKind).stop(
      engine,
      plan,
      this.kindContext(async () => undefined, signal ?? new AbortController().signal),
      { untilExited: true },
    );
  }

  moveVolumes(migrationId: number, ctx: MigrationJobContext): Promise<MovedVolumes> {
    return moveVolumes(this.parts, migrationId, ctx);
  }

  discardStaging(migrationId: number): Promise<void> {
    return discardStaging(this.parts, migrationId);
  }

  removeMigrationHelpers(serverId: number, migrationUuid: string): Promise<void> {
    return removeMigrationHelpers(this.parts, serverId, migrationUuid);
  }

  async logs(resourceId: number, opts: { lines: number; container?: string; timestamps?: boolean }): Promise<string> {
    if (!this.isLive(await serverOfResource(this.db, resourceId))) return '';
    const plan = await planResource(this.db, resourceId);
    const engine = await this.engineForServerId(plan.serverId);
    return kindFor(plan.engineKind).logs(engine, plan, opts);
  }

  dockerCleanup(serverId: number, opts: { allImages: boolean; volumes: boolean; networks: boolean; signal?: AbortSignal }): Promise<string[]> {
    return dockerCleanup(this.parts, serverId, opts);
  }

  removeResource(resourceId: number, opts: RemoveOptions): Promise<string[]> {
    return removeResource(this.parts, resourceId, opts);
  }

  removePreview(resourceId: number, pullRequestId: number, opts: { volumes: boolean }): Promise<string[]> {
    return removePreview(this.parts, resourceId, pullRequestId, opts);
  }

  removeLeftovers(serverId: number, resourceUuid: string, volumes: string[]): Promise<string[]> {
    return removeLeftovers(this.parts, serverId, resourceUuid, volumes);
  }

  orphans(serverId: number): Promise<Orphans> {
    return orphans(this.parts, serverId);
  }

  runBackup(executionId: number, signal: AbortSignal): Promise<BackupOutcome> {
    return runBackup(this.parts, executionId, signal);
  }

  restoreBackup(executionId: number, signal: AbortSignal): Promise<{ logs: string }> {
    return restoreBackup(this.parts, executionId, signal);
  }

  removeBackupFiles(resourceId: number, filenames: string[]): Promise<void> {
    return removeBackupFiles(this.parts, resourceId, filenames);
  }

  runVolumeBackup(storageId: number, at: Date, signal: AbortSignal): Promise<{ filename: string; size: number; logs: string }> {
    return runVolumeBackup(this.parts, storageId, at, signal);
  }

  async execCommand(resourceId: number, container: string | null, command: string, opts: { signal: AbortSignal; maxChars: number }): Promise<{ exitCode: number; output: string; head: string }> {
    const server = await serverOfResource(this.db, resourceId);
    if (!this.isLive(server)) return recordOnlyRuntime.execCommand(resourceId, container, command, opts);
    const plan = await planResource(this.db, resourceId);
    const c = taskContainer(plan, container);
    const what = c.spec.labels?.['berth.container'] ? 'service' : 'application';
    const engine = await this.engineFor(server);
    // engine kind dispatch: the kind names the container (a swarm service's running task).
    const target = await kindFor(plan.engineKind).execTarget(engine, plan, c, opts.signal);
    return execTask(engine, target, command, { ...opts, what });
  }

  async close(): Promise<void> {
    if (this.connections) await (await this.connections).close();
  }
}
