import { sql } from 'kysely';
import { dockerCleanup } from './prune.js';
import type { Logger } from 'pino';
import { volumeName } from '../core/model/volumes.js';
import { DEFAULT_STOP_TIMEOUT_S } from '../core/model/container-spec.js';
import {
  reachesEngine,
  recordOnlyRuntime,
  type ApplicationImage,
  type Orphans,
  type RemoveOptions,
  SERVER_ENGINE_COLUMNS,
  type MigrationJobContext,
  type MovedVolumes,
  type MigrationProgress,
  type Runtime,
  type RuntimeJobContext,
  type ServerEngine,
  type ValidationResult,
} from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import type { EngineClient } from './engine-client.js';
import { ConflictError, NotFoundError } from './engine-errors.js';
import { atomically } from '../store/atomic.js';
import { backoffDelay, DEFAULT_RETRY, sleepWithSignal } from './retry.js';
import { runKindJob } from './kind.js';
import { swarmKind } from './swarm/index.js';
import { LABEL_MANAGED, LABEL_RESOURCE, planRefusal, planResource, type Plan, type PlannedContainer } from './plan.js';
import { berthRunsHealthchecks, EngineWatchers } from './engine-watcher.js';
import { hasHealthcheck } from '../core/observed-status.js';
import type { SshTuning } from './connections.js';
import type { BackupOutcome } from '../core/runtime.js';
import type { DatabaseConfig } from '../core/model/database.js';
import type { DatabaseKind } from '../core/model/kinds.js';
import { TargetGuard } from '../core/outbound-guard.js';
import type { ChangePublisher } from '../core/changes.js';
import { execTask } from './task-exec.js';
import { proxyState, syncProxy } from './proxy.js';
import { DEFAULT_PROXY_IMAGE } from '../core/model/proxy.js';
import { DEFAULT_IMAGES_TO_KEEP, isBuilt, UNBUILT_TAG, type ApplicationConfig, type BuildPack } from '../core/model/application.js';
import { DEFAULT_BUILDPACK_IMAGES, type BuildpackImages } from '../config/config.js';
import { BACKUP_DIR, backupVolumeName, lastLines, sizedOutput, dumpPlan, restorePlan, safeBackupFile, SIZE_MARKER } from './backup-plan.js';

/**
 * The engine client, the SSH transport and the volume copier pull in undici, ssh2 and node-tar;
 * `berth mcp` starts for every desktop session and mostly never talks to an engine, so they load
 * on first use.
 */
let engineModules: Promise<{ engine: typeof import('./engine-client.js'); sync: typeof import('./volume-sync.js'); connections: typeof import('./connections.js') }> | undefined;
const loadEngineModules = () =>
  (engineModules ??= Promise.all([import('./engine-client.js'), import('./volume-sync.js'), import('./connections.js')]).then(([engine, sync, connections]) => ({ engine, sync, connections })));

/** Rounds of differences while the resource runs (after the full copy), at most. */
const MAX_PRECOPY_ROUNDS = 6;
/**
 * The resource is stopped once the last round's difference would take at most this long to send
 * at the full copy's rate (the last pass is bounded by time, not size), or stops shrinking.
 */
const FINAL_SEND_BUDGET_MS = 150;
/** Progress is saved (and heard by listeners) at most this often while bytes flow. */
const PROGRESS_EVERY_MS = 250;

/** Marks staging volumes with their migration, so only those are ever discarded. */
const LABEL_MIGRATION = 'berth.migration';

/** How long a started container must stay up (without a health check) to count as running. */
const SETTLE_MS = 1_000;
/** How long a deploy waits for its containers to run (healthy, with a health check). */
const DEPLOY_READY_TIMEOUT_MS = 120_000;
const POLL_MS = 150;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => (clearTimeout(t), reject(signal!.reason));
    const t = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** A planned container's dependencies (compose depends_on), in the plan's terms. */
const dependsOn = (c: PlannedContainer) => c.dependsOn ?? [];

/** The last health-check output, for a failure message. */
function healthOutput(h: { Status: string; [key: string]: unknown } | undefined): string {
  const log = Array.isArray(h?.Log) ? (h.Log as { ExitCode?: number; Output?: string }[]) : [];
  const last = log[log.length - 1];
  return last ? ` Last check: exit code ${last.ExitCode ?? '?'}${last.Output?.trim() ? `, output: ${last.Output.trim().slice(0, 500)}` : ''}.` : '';
}

/** A listed container's name (the engine lists it with a leading slash). */
const containerName = (c: { Names: string[]; Id: string }) => c.Names[0]?.replace(/^\//, '') ?? c.Id;

/** Networks berth never creates: the engine's own modes. */
const BUILTIN_NETWORKS = new Set(['none', 'host', 'bridge', 'default']);

/**
 * The runtime that acts on real Docker-compatible engines: validates servers, turns deployments
 * into containers matching the records (replacing old ones, never touching volumes), moves volume
 * data for migrations, and reads logs. Servers registered without an engine endpoint are not
 * managed: for them it keeps the records only, and says so.
 */
export class LiveRuntime implements Runtime {
  private connections: Promise<import('./connections.js').EngineConnections> | undefined;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    /** Image for the helper containers of a volume copy. */
    private readonly helperImage: string,
    /** Also compare every file's sha256 after a volume copy (see copyVolume's `checksums`). */
    private readonly checksums = false,
    private readonly ssh: SshTuning = {},
    /** Where a team's git repositories may be fetched from (the outbound guard). */
    private readonly outbound: TargetGuard = new TargetGuard(''),
    /** The engine watcher's lease and full-look intervals. */
    private readonly watch: { leaseMs: number; reconcileMs: number; changes?: ChangePublisher } = { leaseMs: 15_000, reconcileMs: 15_000 },
    /** The base images of generated builds (nixpacks, static). */
    private readonly buildpackImages: BuildpackImages = DEFAULT_BUILDPACK_IMAGES,
    /** The proxy's image when a server's proxy configuration names none (BERTH_PROXY_IMAGE). */
    private readonly proxyImage = DEFAULT_PROXY_IMAGE,
  ) {}

  async syncProxy(serverId: number, opts: { start?: boolean; recreate?: boolean; signal?: AbortSignal; log?: (line: string) => Promise<void> } = {}): Promise<void> {
    const engine = await this.liveEngineOf(serverId);
    if (engine) await syncProxy(this.db, engine, serverId, { ...opts, signal: opts.signal ?? AbortSignal.timeout(DEPLOY_READY_TIMEOUT_MS), defaultImage: this.proxyImage });
  }

  async proxyStatus(serverId: number): Promise<string | null> {
    const engine = await this.liveEngineOf(serverId);
    return engine ? proxyState(engine, AbortSignal.timeout(30_000)) : null;
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

  private async serverOfResource(resourceId: number): Promise<ServerEngine> {
    return this.db
      .selectFrom('resources as r')
      .innerJoin('destinations as d', 'd.id', 'r.destination_id')
      .innerJoin('servers as s', 's.id', 'd.server_id')
      .select(SERVER_ENGINE_COLUMNS.map((c) => `s.${c}` as const))
      .where('r.id', '=', resourceId)
      .executeTakeFirstOrThrow();
  }

  private conns() {
    return (this.connections ??= loadEngineModules().then((m) => new m.connections.EngineConnections(this.db, this.logger, this.ssh)));
  }

  /** The server's engine client (unix, TCP or SSH), reused while the record is unchanged. */
  async engineFor(server: ServerEngine): Promise<EngineClient> {
    return (await this.conns()).engineFor(server);
  }

  async engineForServerId(serverId: number): Promise<EngineClient> {
    const s = await this.db
      .selectFrom('servers')
      .select([...SERVER_ENGINE_COLUMNS])
      .where('id', '=', serverId)
      .executeTakeFirstOrThrow();
    return await this.engineFor(s);
  }

  async validateServer(server: ServerEngine, opts: { acceptHostKey?: boolean } = {}): Promise<ValidationResult> {
    return (await this.conns()).validate(server, opts);
  }

  async runDeployment(deploymentId: number, ctx: RuntimeJobContext): Promise<'finished' | 'failed'> {
    const d = await ctx.db.selectFrom('deployments').selectAll().where('id', '=', deploymentId).executeTakeFirstOrThrow();
    if (!this.isLive(await this.serverOfResource(d.resource_id))) return recordOnlyRuntime.runDeployment(deploymentId, ctx);
    if (d.rollback_tag) await this.useRollbackImage(d.resource_id, d.rollback_tag, ctx);
    else await this.buildIfNeeded(d, ctx);
    const plan = await planResource(ctx.db, d.resource_id);
    const engine = await this.engineForServerId(plan.serverId);
    // What berth wants comes first: the watcher reads a container that is down while the
    // resource should run as restarting, and as exited once it should be stopped.
    // A resource never seen on this engine (just created, or just moved here) is not running until
    // the engine says so: its status must not read `running` while its start is still under way.
    const want = (status: 'running' | 'exited') =>
      ctx.db.updateTable('resources').set({ status, observed_status: sql<string>`coalesce(observed_status, 'exited')`, updated_at: nowIso() }).where('id', '=', d.resource_id).execute();
    try {
      // engine kind dispatch
      if (plan.engineKind === 'swarm') {
        await want(d.kind === 'stop' ? 'exited' : 'running');
        await runKindJob(swarmKind, d.kind, engine, plan, ctx);
        return 'finished';
      }
      switch (d.kind) {
        case 'stop':
          await want('exited');
          await this.stopAll(engine, plan, ctx);
          await this.ensureStopped(engine, plan, ctx.signal, ctx.log);
          return 'finished';
        case 'start':
          await want('running');
          await this.start(engine, plan, ctx);
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
          await this.stopAll(engine, plan, ctx);
          // One that kept restarting is removed by ensureStopped, and deployed again below.
          await this.ensureStopped(engine, plan, ctx.signal, ctx.log);
          if ((await this.missing(engine, plan)).length === 0) {
            await this.startInOrder(engine, plan, ctx);
            await ctx.log('restarted');
            return 'finished';
          }
          await ctx.log('some containers do not exist; deploying instead');
          break;
        }
      }
      await want('running');
      await this.deploy(engine, plan, ctx);
      if (d.kind === 'deploy') await this.pruneImages(engine, d.resource_id, ctx).catch((err) => ctx.log(`could not remove old images: ${(err as Error).message}`));
      return 'finished';
    } finally {
      await this.observeOn(engine, d.resource_id).catch((err) => this.logger.debug({ err: (err as Error).message }, 'could not observe after a deployment'));
      // The records are the routes: a deploy, start or restart (re)joins the proxy with its domains.
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
    const server = await this.serverOfResource(resourceId);
    if (!this.isLive(server)) return null;
    return this.observeOn(await this.engineFor(server), resourceId);
  }

  /**
   * A dockerfile application is built on its server's engine at each deploy, tagged per
   * deployment (localhost/berth-app-<uuid>:<deployment uuid>), and its record then names that
   * image. The build happens before anything is stopped: a failed build leaves the running
   * container as it was. Start and restart use the last built image.
   */
  private async buildIfNeeded(d: { uuid: string; kind: string; resource_id: number }, ctx: RuntimeJobContext): Promise<void> {
    const r = await ctx.db.selectFrom('resources').select(['uuid', 'kind', 'config', 'team_id']).where('id', '=', d.resource_id).executeTakeFirstOrThrow();
    if (r.kind !== 'application') return;
    const c = JSON.parse(r.config) as ApplicationConfig;
    if (!isBuilt(c) || !c.source) return;
    if (d.kind !== 'deploy') {
      if (c.docker_registry_image_tag === UNBUILT_TAG) throw new Error('This application has not been built yet: deploy it first.');
      return;
    }
    const source = c.source;
    const { prepareBuildContext } = await import('./build-source.js');
    let ssh: import('./build-source.js').SshCloneSecrets | undefined;
    if ('private_key_id' in source && source.private_key_id !== undefined) {
      // The team's own key only: a key moved to another team (it cannot be) would not be used.
      const key = await ctx.db.selectFrom('private_keys').select('private_key').where('id', '=', source.private_key_id).where('team_id', '=', r.team_id).executeTakeFirst();
      if (key) {
        ssh = {
          privateKey: key.private_key,
          pinHostKey: async (keys) => {
            source.git_host_key = keys;
            await atomically(ctx.db, async (db) => {
              const now = await db.selectFrom('resources').select('config').where('id', '=', d.resource_id).executeTakeFirstOrThrow();
              const fresh = JSON.parse(now.config) as ApplicationConfig;
              if (fresh.source && 'git_repository' in fresh.source && !fresh.source.git_host_key) fresh.source.git_host_key = keys;
              await db
                .updateTable('resources')
                .set({ config: JSON.stringify(fresh), updated_at: nowIso() })
                .where('id', '=', d.resource_id)
                .execute();
            });
          },
        };
      }
    }
    const context = await prepareBuildContext(source, this.outbound, ctx.log, ssh, { pack: c.build_pack as BuildPack, port: c.ports_exposes, images: this.buildpackImages });
    try {
      if (context.commit) await ctx.log(`building commit ${context.commit}`);
      // The Dockerfile berth wrote is kept whole in the log: a person reads what ran.
      if (context.generated) await ctx.log(`${c.build_pack} detected ${context.generated.stack}; generated Dockerfile:\n${context.generated.dockerfile.trimEnd()}`);
      const image = `localhost/berth-app-${r.uuid}`;
      const engine = await this.engineFor(await this.serverOfResource(d.resource_id));
      // Build output comes line by line; it reaches the deployment's log in batches.
      let pending: string[] = [];
      let writing = Promise.resolve();
      const flush = () => {
        const lines = pending;
        pending = [];
        if (lines.length) writing = writing.then(() => ctx.log(lines.join('\n')));
      };
      try {
        await engine.build(context.tar(), { tag: `${image}:${d.uuid}`, dockerfile: context.dockerfile, signal: ctx.signal, onLine: (l) => (pending.push(l), pending.length >= 25 && flush()) });
      } finally {
        flush();
        await writing;
      }
      await ctx.log(`built ${image}:${d.uuid}`);
      await ctx.db
        .updateTable('resources')
        .set({ config: JSON.stringify({ ...c, docker_registry_image_name: image, docker_registry_image_tag: d.uuid }), updated_at: nowIso() })
        .where('id', '=', d.resource_id)
        .execute();
    } finally {
      await context.cleanup();
    }
  }

  /** The repository tags of an application's image on an engine, newest first. */
  private async imagesOf(engine: EngineClient, repository: string, signal?: AbortSignal): Promise<ApplicationImage[]> {
    // The engine may name a short reference in full (busybox → docker.io/library/busybox).
    const names = new Set([repository, `localhost/${repository}`, `docker.io/${repository}`, `docker.io/library/${repository}`]);
    const seen = new Map<string, ApplicationImage & { at: number }>();
    for (const img of await engine.listImages(repository, { signal })) {
      for (const ref of img.RepoTags ?? []) {
        const i = ref.lastIndexOf(':');
        if (i < 0 || !names.has(ref.slice(0, i))) continue;
        const tag = ref.slice(i + 1);
        if (!seen.has(tag)) seen.set(tag, { tag, created_at: new Date(img.Created * 1000).toISOString(), at: img.Created });
      }
    }
    return [...seen.values()].sort((a, b) => b.at - a.at || b.tag.localeCompare(a.tag)).map(({ tag, created_at }) => ({ tag, created_at }));
  }

  async applicationImages(resourceId: number): Promise<ApplicationImage[] | null> {
    const server = await this.serverOfResource(resourceId);
    if (!this.isLive(server)) return null;
    const r = await this.db.selectFrom('resources').select('config').where('id', '=', resourceId).executeTakeFirstOrThrow();
    return this.imagesOf(await this.engineFor(server), (JSON.parse(r.config) as ApplicationConfig).docker_registry_image_name);
  }

  /**
   * A rollback runs a kept image instead of building or pulling: checked on the engine first (a
   * tag removed meanwhile fails the deployment and leaves the record as it was), then recorded as
   * the application's image, then deployed as any deploy.
   */
  private async useRollbackImage(resourceId: number, tag: string, ctx: RuntimeJobContext): Promise<void> {
    const engine = await this.engineFor(await this.serverOfResource(resourceId));
    const r = await ctx.db.selectFrom('resources').select('config').where('id', '=', resourceId).executeTakeFirstOrThrow();
    const ref = `${(JSON.parse(r.config) as ApplicationConfig).docker_registry_image_name}:${tag}`;
    await engine.inspectImage(ref, { signal: ctx.signal }).catch((err) => {
      throw err instanceof NotFoundError ? new Error(`The image ${ref} is no longer on the server's engine; list_application_rollback_images shows what is kept.`) : err;
    });
    await ctx.log(`rolling back to ${ref}`);
    // Only the tag changes: other fields patched meanwhile stay.
    await atomically(ctx.db, async (db) => {
      const now = await db.selectFrom('resources').select('config').where('id', '=', resourceId).executeTakeFirstOrThrow();
      await db
        .updateTable('resources')
        .set({ config: JSON.stringify({ ...(JSON.parse(now.config) as ApplicationConfig), docker_registry_image_tag: tag }), updated_at: nowIso() })
        .where('id', '=', resourceId)
        .execute();
    });
  }

  /**
   * Bounds a built application's kept images (Coolify's docker_images_to_keep, default 2): the one
   * it runs stays, and the newest others up to the bound; older ones are removed from the engine.
   * Images berth did not build (a registry image's other tags) are never removed.
   */
  private async pruneImages(engine: EngineClient, resourceId: number, ctx: RuntimeJobContext): Promise<void> {
    const r = await ctx.db.selectFrom('resources').select(['uuid', 'kind', 'config']).where('id', '=', resourceId).executeTakeFirstOrThrow();
    if (r.kind !== 'application') return;
    const c = JSON.parse(r.config) as ApplicationConfig;
    if (!isBuilt(c) || c.docker_registry_image_name !== `localhost/berth-app-${r.uuid}`) return;
    const keep = c.docker_images_to_keep ?? DEFAULT_IMAGES_TO_KEEP;
    const older = (await this.imagesOf(engine, c.docker_registry_image_name, ctx.signal)).filter((i) => i.tag !== c.docker_registry_image_tag).slice(keep);
    for (const i of older) {
      const ref = `${c.docker_registry_image_name}:${i.tag}`;
      try {
        if (await engine.removeImage(ref, { signal: ctx.signal })) await ctx.log(`removed old image ${ref} (keeping ${keep} for rollback)`);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
  }

  async serviceContainer(resourceId: number, container: string, action: 'start' | 'stop' | 'restart'): Promise<string> {
    if (!this.isLive(await this.serverOfResource(resourceId))) return recordOnlyRuntime.serviceContainer(resourceId, container, action);
    const plan = await planResource(this.db, resourceId);
    const c = plan.containers.find((k) => k.spec.labels?.['berth.container'] === container);
    if (!c) throw new Error(`The service has no container ${container}.`);
    const engine = await this.engineForServerId(plan.serverId);
    const one: Plan = { ...plan, containers: [c] };
    const ctx = { db: this.db, log: async () => undefined, signal: AbortSignal.timeout(DEPLOY_READY_TIMEOUT_MS + 60_000) };
    try {
      if (action !== 'start') {
        await this.stopAll(engine, one, ctx);
        await this.ensureStopped(engine, one, ctx.signal);
      }
      if (action !== 'stop') {
        if ((await this.missing(engine, one)).length) await this.deploy(engine, one, ctx);
        else await this.startInOrder(engine, one, ctx);
      }
    } catch (err) {
      if (err instanceof NotFoundError) throw new Error(`The container ${c.name} does not exist on the server: deploy the service first.`);
      throw err;
    } finally {
      await this.observeOn(engine, resourceId).catch(() => undefined);
    }
    return `${c.name} ${action === 'stop' ? 'stopped' : action === 'start' ? 'started' : 'restarted'}`;
  }

  /** Starts the plan's containers (and waits until they run); deploys them when any is missing. */
  private async start(engine: EngineClient, plan: Plan, ctx: RuntimeJobContext): Promise<void> {
    // engine kind dispatch
    if (plan.engineKind === 'swarm') return swarmKind.start(engine, plan, ctx);
    const missing = await this.missing(engine, plan);
    if (missing.length === 0) {
      await this.startInOrder(engine, plan, ctx);
      await ctx.log(`started ${plan.containers.length} container(s)`);
      return;
    }
    await ctx.log(`${missing.length} container(s) do not exist yet; deploying instead`);
    await this.deploy(engine, plan, ctx);
  }

  async startResource(resourceId: number, signal?: AbortSignal): Promise<void> {
    if (!this.isLive(await this.serverOfResource(resourceId))) return;
    const plan = await planResource(this.db, resourceId);
    const engine = await this.engineForServerId(plan.serverId);
    try {
      await this.start(engine, plan, { db: this.db, log: async () => undefined, signal: signal ?? new AbortController().signal });
    } finally {
      await this.observeOn(engine, resourceId).catch(() => undefined);
    }
  }

  private async missing(engine: EngineClient, plan: Plan): Promise<string[]> {
    const out: string[] = [];
    for (const c of plan.containers) {
      try {
        await engine.inspectContainer(c.name);
      } catch (err) {
        if (err instanceof NotFoundError) out.push(c.name);
        else throw err;
      }
    }
    return out;
  }

  /**
   * Starts containers in the plan's order (dependencies first), each once the ones it depends on
   * are as its condition asks (started, healthy, or exited with 0), then waits until every
   * long-running one runs (healthy, when it has a health check). Throws with the exit code and
   * the log tail of one that does not.
   */
  private async startInOrder(engine: EngineClient, plan: Plan, ctx: Pick<RuntimeJobContext, 'log' | 'signal'>): Promise<void> {
    const oneShots = new Set(
      plan.containers.flatMap((c) =>
        dependsOn(c)
          .filter((d) => d.condition === 'service_completed_successfully')
          .map((d) => d.name),
      ),
    );
    for (const c of plan.containers) {
      for (const dep of dependsOn(c)) {
        if (dep.condition === 'service_healthy') await this.awaitReady(engine, dep.name, ctx, { requireHealthy: true });
        if (dep.condition === 'service_completed_successfully') {
          const w = await engine.waitContainer(dep.name, { signal: ctx.signal });
          if (w.StatusCode !== 0) throw new Error(`${dep.name} exited with ${w.StatusCode}; ${c.name} depends on its success.${await this.logTail(engine, dep.name)}`);
        }
      }
      await engine.startContainer(c.name, { signal: ctx.signal });
    }
    for (const c of plan.containers) if (!oneShots.has(c.name)) await this.awaitReady(engine, c.name, ctx);
  }

  /** The last lines a container wrote, for a failure message. */
  private async logTail(engine: EngineClient, name: string): Promise<string> {
    try {
      const { entries } = await engine.containerLogs(name, { tail: 20, maxBytes: 16 * 1024 });
      const lines = entries.map((e) => e.line).filter(Boolean);
      return lines.length ? `\nLast log lines:\n${lines.join('\n')}` : '\nIt wrote no log.';
    } catch {
      return '';
    }
  }

  /**
   * Waits until a started container runs for good: healthy when it has a health check (berth runs
   * the check where the engine does not), otherwise up for a short while without a restart. A
   * container that exits, restarts or turns unhealthy fails at once, with its exit code and log
   * tail; one that never gets there fails at the timeout.
   */
  private async awaitReady(engine: EngineClient, name: string, ctx: Pick<RuntimeJobContext, 'log' | 'signal'>, opts: { requireHealthy?: boolean } = {}): Promise<void> {
    const deadline = Date.now() + DEPLOY_READY_TIMEOUT_MS;
    const drivesChecks = await this.drivesHealthchecks(engine);
    let first: number | undefined;
    let upSince: number | undefined;
    let lastCheck = 0;
    let waitSaid = false;
    for (;;) {
      const info = await engine.inspectContainer(name, { signal: ctx.signal });
      const s = info.State;
      const restarts = info.RestartCount ?? 0;
      first ??= restarts;
      const hasCheck = hasHealthcheck(info);
      if (!s.Running || restarts > first) {
        // A one-shot container (no restart policy) that did its work is done, not failed.
        if (!s.Running && s.ExitCode === 0 && (info.HostConfig.RestartPolicy?.Name ?? 'no') === 'no' && !opts.requireHealthy) return;
        const code = s.Running ? await this.exitCodeBetweenRestarts(engine, name, ctx.signal) : s.ExitCode;
        throw new Error(`${name} did not stay running (exit code ${code ?? 'unknown'}${restarts > first ? `, restarted ${restarts - first} time(s)` : ''}).${await this.logTail(engine, name)}`);
      }
      if (hasCheck) {
        const health = s.Health?.Status;
        // Said once, so a caller following the deployment (a progress heartbeat) sees what it waits on.
        if (health !== 'healthy' && !waitSaid) {
          waitSaid = true;
          await ctx.log(`${name}: health check ${health || 'starting'}, waiting up to ${DEPLOY_READY_TIMEOUT_MS / 1000} s for healthy`);
        }
        if (health === 'healthy') {
          await ctx.log(`${name} is healthy`);
          return;
        }
        if (health === 'unhealthy') throw new Error(`${name} is unhealthy: its health check failed.${healthOutput(s.Health)}${await this.logTail(engine, name)}`);
        if (drivesChecks && Date.now() - lastCheck >= 1_000) {
          lastCheck = Date.now();
          await engine.runHealthcheck(name, { signal: ctx.signal });
          continue;
        }
      } else if (opts.requireHealthy) {
        throw new Error(`${name} has no health check, and another container waits for it to be healthy.`);
      } else {
        upSince ??= Date.now();
        if (Date.now() - upSince >= SETTLE_MS) return;
      }
      if (Date.now() > deadline) throw new Error(`${name} did not become ${hasCheck ? 'healthy' : 'ready'} within ${DEPLOY_READY_TIMEOUT_MS / 1000} s.${await this.logTail(engine, name)}`);
      await sleep(POLL_MS, ctx.signal);
    }
  }

  /**
   * A container its policy restarts at once reports running with exit code 0 in most inspects
   * (podman): its real exit code shows only between two runs, caught by looking often for a moment.
   */
  private async exitCodeBetweenRestarts(engine: EngineClient, name: string, signal?: AbortSignal): Promise<number | null> {
    for (let i = 0; i < 50; i++) {
      const s = (await engine.inspectContainer(name, { signal })).State;
      if (!s.Running) return s.ExitCode;
      await sleep(10, signal);
    }
    return null;
  }

  private readonly podmanEngines = new WeakMap<EngineClient, Promise<boolean>>();

  /** Whether berth runs this engine's health checks (podman), asked once per client. */
  private drivesHealthchecks(engine: EngineClient): Promise<boolean> {
    let p = this.podmanEngines.get(engine);
    if (!p) {
      p = engine.version().then(berthRunsHealthchecks);
      p.catch(() => this.podmanEngines.delete(engine));
      this.podmanEngines.set(engine, p);
    }
    return p;
  }

  /**
   * Stops every container of the plan with its own grace period (a database's clean shutdown,
   * 10 s otherwise). `untilExited`: resolve as soon as each container's processes have exited,
   * leaving the engine to finish its stop (podman's clean-up after an exit takes 100–400 ms, which
   * a migration's pause need not include); a stop that then fails is logged.
   */
  private async stopAll(engine: EngineClient, plan: Plan, ctx: Pick<RuntimeJobContext, 'log' | 'signal'>, opts: { untilExited?: boolean } = {}): Promise<void> {
    await Promise.all(
      plan.containers.map(async (c) => {
        const stopping = engine.stopContainer(c.name, c.spec.stopTimeoutS ?? DEFAULT_STOP_TIMEOUT_S, { signal: ctx.signal });
        try {
          if (opts.untilExited) {
            stopping.catch((err) => !(err instanceof NotFoundError) && this.logger.warn({ err, container: c.name }, 'stop failed after the container exited'));
            await Promise.race([stopping, this.exited(engine, c.name, ctx.signal)]);
          } else {
            await stopping;
          }
          await ctx.log(`stopped ${c.name}`);
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
        }
      }),
    );
  }

  /**
   * Resolves once the container's processes are gone (polled; the stop call does the stopping).
   * Not "Running: false": podman reports that for "stopping" too, while the process still runs;
   * a process id of 0 means it has exited.
   */
  private async exited(engine: EngineClient, name: string, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const c = await engine.inspectContainer(name, { signal });
      if (!c.State.Running && c.State.Restarting !== true && c.State.Status !== 'stopping' && !c.State.Pid) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Replaces every container of the plan with a fresh one from the records; volumes persist. */
  private async deploy(engine: EngineClient, plan: Plan, ctx: RuntimeJobContext): Promise<void> {
    // Whatever door the settings came through, nothing reaches into a host that does not allow it.
    const refusal = planRefusal(plan);
    if (refusal) throw new Error(refusal);
    for (const note of plan.notes) await ctx.log(note);
    if (!BUILTIN_NETWORKS.has(plan.network)) {
      try {
        await engine.inspectNetwork(plan.network, { signal: ctx.signal });
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        // A service's own network carries its uuid, so delete and migration leftovers find it.
        const labels = { [LABEL_MANAGED]: 'true', ...(plan.ownNetwork ? { [LABEL_RESOURCE]: plan.network } : {}) };
        await engine.createNetwork(plan.network, { labels, signal: ctx.signal });
        await ctx.log(`created network ${plan.network}`);
      }
    }
    for (const v of plan.volumes) {
      try {
        await engine.inspectVolume(v, { signal: ctx.signal });
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        await engine.createVolume(v, { labels: { 'berth.managed': 'true' }, signal: ctx.signal });
        await ctx.log(`created volume ${v}`);
      }
    }
    const { ensureImage } = (await loadEngineModules()).engine;
    for (const c of plan.containers) await ensureImage(engine, c.spec.image, { signal: ctx.signal });
    if (await this.rollingUpdate(engine, plan, ctx)) return;
    for (const c of plan.containers) {
      // removeContainer answers false (no error) when there was none to remove.
      if (await engine.removeContainer(c.name, { force: true, signal: ctx.signal })) await ctx.log(`removed the previous ${c.name}`);
      await engine.createContainer(c.name, c.spec, { signal: ctx.signal });
      await this.writeFiles(engine, c.name, c, ctx);
    }
    await this.startInOrder(engine, plan, ctx);
    for (const c of plan.containers) await ctx.log(`started ${c.name} from ${c.spec.image}`);
  }

  /** A container's file storages, written into it once created (archives work on a stopped container). */
  private async writeFiles(engine: EngineClient, container: string, c: Plan['containers'][number], ctx: RuntimeJobContext): Promise<void> {
    if (!c.files?.length) return;
    // Loaded here, as the engine modules are: node-tar stays out of a start that never deploys.
    const { fileStoragesTar } = await import('./file-tar.js');
    await engine.putArchive(container, '/', fileStoragesTar(c.files), { signal: ctx.signal });
    await ctx.log(`wrote ${c.files.length} file storage(s) into ${container}: ${c.files.map((f) => f.path).join(', ')}`);
  }

  /**
   * Coolify's rolling update, for a one-container resource with a health check and no fixed host
   * port (two containers cannot bind one): the new container starts beside the running one, and
   * replaces it only once healthy; a new one that fails is removed and the previous one keeps
   * serving. False when it does not apply (the caller replaces the container in place).
   */
  private async rollingUpdate(engine: EngineClient, plan: Plan, ctx: RuntimeJobContext): Promise<boolean> {
    const [c] = plan.containers;
    const check = c?.spec.healthcheck?.test;
    if (plan.containers.length !== 1 || !c || !check?.length || check[0] === 'NONE' || (c.spec.ports ?? []).some((p) => p.hostPort !== undefined)) return false;
    let old: Awaited<ReturnType<EngineClient['inspectContainer']>> | undefined;
    try {
      old = await engine.inspectContainer(c.name, { signal: ctx.signal });
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    if (!old?.State.Running) return false;
    const next = `${c.name}-next`;
    await engine.removeContainer(next, { force: true, signal: ctx.signal });
    await engine.createContainer(next, c.spec, { signal: ctx.signal });
    await this.writeFiles(engine, next, c, ctx);
    await ctx.log(`rolling update: starting ${next} beside the running ${c.name}`);
    try {
      await engine.startContainer(next, { signal: ctx.signal });
      await this.awaitReady(engine, next, ctx, { requireHealthy: true });
    } catch (err) {
      await engine.removeContainer(next, { force: true }).catch(() => undefined);
      throw new Error(`${(err as Error).message}\nThe new container was removed; the previous one keeps running.`);
    }
    await engine.removeContainer(c.name, { force: true, signal: ctx.signal });
    await engine.renameContainer(next, c.name, { signal: ctx.signal });
    await ctx.log(`rolling update: ${c.name} replaced by the new container from ${c.spec.image}`);
    return true;
  }

  async stopResource(resourceId: number, signal?: AbortSignal): Promise<void> {
    if (!this.isLive(await this.serverOfResource(resourceId))) return;
    const plan = await planResource(this.db, resourceId);
    const engine = await this.engineForServerId(plan.serverId);
    // engine kind dispatch
    if (plan.engineKind === 'swarm') return swarmKind.stop(engine, plan, { log: async () => undefined, signal: signal ?? new AbortController().signal });
    await this.stopAll(engine, plan, { log: async () => undefined, signal: signal ?? new AbortController().signal }, { untilExited: true });
    await this.ensureStopped(engine, plan, signal);
  }

  /**
   * A stop must end the container even while its restart policy restarts it. podman (4.x) keeps
   * restarting a container that exits at once, whatever stop answered (304, or even 204 between
   * two restarts), sometimes over a second later on a loaded machine, and cannot change a restart
   * policy in place. So a container still up after the stop, or one its policy has restarted
   * before, is removed at once rather than watched: its volumes are kept, and a start (or deploy)
   * recreates it from the records. One that never restarted and is down stays as it is.
   */
  private async ensureStopped(engine: EngineClient, plan: Plan, signal?: AbortSignal, log?: (line: string) => Promise<void>): Promise<void> {
    await Promise.all(
      plan.containers.map(async (c) => {
        try {
          const { State: state, RestartCount: restarts } = await engine.inspectContainer(c.name, { signal });
          if (!state.Running && state.Restarting !== true && !restarts) return;
        } catch (err) {
          if (err instanceof NotFoundError) return;
          throw err;
        }
        this.logger.warn({ container: c.name }, 'container restarted by its policy around the stop; removing it (volumes kept)');
        await engine.removeContainer(c.name, { force: true, removeVolumes: false, signal });
        await log?.(`${c.name} was restarted by its policy: removed so that it stays stopped (its volumes are kept; start recreates it)`);
      }),
    );
  }

  private async migrationParts(migrationId: number) {
    const m = await this.db.selectFrom('migrations_jobs').selectAll().where('id', '=', migrationId).executeTakeFirstOrThrow();
    const r = await this.db.selectFrom('resources').select(['id', 'uuid']).where('id', '=', m.resource_id).executeTakeFirstOrThrow();
    const serverOf = (destinationId: number): Promise<ServerEngine> =>
      this.db
        .selectFrom('destinations as d')
        .innerJoin('servers as s', 's.id', 'd.server_id')
        .select(SERVER_ENGINE_COLUMNS.map((c) => `s.${c}` as const))
        .where('d.id', '=', destinationId)
        .executeTakeFirstOrThrow();
    const [from, to] = await Promise.all([serverOf(m.from_destination_id), serverOf(m.to_destination_id)]);
    return { m, r, from: await this.engineFor(from), to: await this.engineFor(to) };
  }

  /**
   * Live migration of a resource's volumes (volume-sync.ts): a full copy of each into a staging
   * volume on the target while the resource runs, then rounds over all volumes that send only what
   * changed, until the difference is small or stops shrinking (bounded); then the resource is
   * stopped, the last difference sent and every volume verified. A staging volume left by a cut-off
   * attempt (berth killed, say) is discarded first. Sources are only read.
   */
  async moveVolumes(migrationId: number, ctx: MigrationJobContext): Promise<MovedVolumes> {
    const { m, r, from, to } = await this.migrationParts(migrationId);
    const storages = await this.db.selectFrom('storages').selectAll().where('resource_id', '=', r.id).orderBy('id').execute();
    const { sync } = await loadEngineModules();
    // Helpers of a cut-off attempt still mount its volumes, which the engine then refuses to remove.
    await Promise.all([this.removeHelpers(from, m.uuid, ctx.signal), this.removeHelpers(to, m.uuid, ctx.signal)]);
    const state: MigrationProgress = { phase: 'pre-copy', round: 0, volumes_total: storages.length, volumes_done: 0, bytes: 0, bytes_total: 0 };
    const report = (patch: Partial<MigrationProgress>) => {
      Object.assign(state, patch);
      return ctx.progress({ ...state });
    };
    const volumes = storages.map((s) => ({ storage: s, staging: `${volumeName(r.uuid, s.name)}-${m.uuid.slice(0, 8)}` }));
    const syncs: import('./volume-sync.js').VolumeSync[] = [];
    let released: Promise<void> | undefined;
    const release = () => (released ??= Promise.all(syncs.map((s) => s.close())).then(() => undefined));
    let moved = false;
    try {
      for (const v of volumes) {
        await to.removeVolume(v.staging, { force: true, signal: ctx.signal }).catch((err) => {
          if (!(err instanceof NotFoundError)) throw err;
        });
        syncs.push(
          await sync.VolumeSync.open({
            from: { engine: from, volume: v.storage.engine_volume ?? volumeName(r.uuid, v.storage.name) },
            to: { engine: to, volume: v.staging, labels: { [LABEL_MANAGED]: 'true', [LABEL_MIGRATION]: m.uuid } },
            helperImage: this.helperImage,
            helperLabels: { [LABEL_MIGRATION]: m.uuid },
            signal: ctx.signal,
          }),
        );
      }
      // Bytes as they flow: saved at most every PROGRESS_EVERY_MS (each save is a store write).
      let lastReport = 0;
      const flowing = (patch: Partial<MigrationProgress>) => {
        const now = Date.now();
        if (now - lastReport < PROGRESS_EVERY_MS) {
          Object.assign(state, patch);
          return;
        }
        lastReport = now;
        void report(patch).catch(() => undefined);
      };
      // The total a progress bar needs, before any byte moves.
      await report({ bytes_expected: (await Promise.all(syncs.map((s) => s.measure()))).reduce((a, b) => a + b, 0) });
      /** One round over every volume; resolves the file bytes it sent. */
      const roundAll = async (phase: MigrationProgress['phase']) => {
        const sourceInUse = phase === 'pre-copy';
        const base = state.bytes;
        const moved = new Array<number>(syncs.length).fill(0);
        const results = await Promise.all(
          syncs.map((s, i) =>
            s.round(
              (p) => {
                if (p.expectedBytes !== undefined) state.bytes_expected = (state.bytes_expected ?? 0) + p.expectedBytes;
                moved[i] = p.transferredBytes;
                flowing({ bytes: base + moved.reduce((a, b) => a + b, 0), current_volume: volumes[i]!.storage.name });
              },
              { sourceInUse },
            ),
          ),
        );
        await report({ phase, round: results[0]?.round ?? state.round, bytes: base + results.reduce((a, x) => a + x.transferredBytes, 0), bytes_total: results.reduce((a, x) => a + x.totalBytes, 0) });
        return results.reduce((a, x) => a + x.transferredBytes, 0);
      };
      // The full copy, one volume at a time (each is one stream through berth); its rate predicts
      // how long a difference takes to send.
      const copyStart = Date.now();
      let copied = 0;
      for (const [i, s] of syncs.entries()) {
        await report({ round: 1, current_volume: volumes[i]!.storage.name });
        const before = state.bytes;
        const res = await s.round((p) => void flowing({ bytes: before + p.transferredBytes }), { sourceInUse: true });
        copied += res.transferredBytes;
        await report({ bytes: before + res.transferredBytes, bytes_total: state.bytes_total + res.totalBytes });
      }
      const bytesPerMs = Math.max(copied / Math.max(Date.now() - copyStart, 1), 1);
      // Rounds of differences while the resource runs, until the next one would fit the budget
      // after the stop, or they no longer shrink.
      let previous = Infinity;
      for (let round = 2; round <= MAX_PRECOPY_ROUNDS; round++) {
        await report({ round });
        const sent = await roundAll('pre-copy');
        if (sent / bytesPerMs <= FINAL_SEND_BUDGET_MS || sent > previous * 0.8) break;
        previous = sent;
      }
      // Still running: note where both sides differ now, so the last pass checks only the change.
      await Promise.all(syncs.map((s) => s.prepareFinal()));
      // The last pass's execs start now and wait: starting one is 0.3–0.7 s of podman and runc.
      await Promise.all(syncs.map((s) => s.armFinal()));
      await ctx.stopSource();
      await report({ phase: 'final-sync', round: state.round + 1 });
      // One signal, one upload per volume (the execs already run), all volumes at once.
      const base = state.bytes;
      let verifying: Promise<void> | undefined;
      const done = await Promise.all(
        syncs.map((s) =>
          s.finalPass({
            checksums: this.checksums,
            onUploaded: () => void (verifying ??= report({ phase: 'verify' })),
          }),
        ),
      );
      await verifying;
      await report({ volumes_done: syncs.length, bytes: base + done.reduce((a, x) => a + x.transferredBytes, 0), bytes_total: done.reduce((a, v) => a + v.bytes, 0), current_volume: undefined });
      moved = true;
      return { staged: new Map(volumes.map((v) => [v.storage.id, v.staging])), release };
    } finally {
      if (!moved) await release();
    }
  }

  /** Removes the volume-copy helper containers of one migration (only they carry its label). */
  private async removeHelpers(engine: EngineClient, migrationUuid: string, signal?: AbortSignal): Promise<void> {
    const helpers = await engine.listContainers({ all: true, labels: { [LABEL_MIGRATION]: migrationUuid }, signal });
    for (const c of helpers) await engine.removeContainer(c.Id, { force: true, removeVolumes: false, signal });
  }

  async discardStaging(migrationId: number): Promise<void> {
    const { m, from, to } = await this.migrationParts(migrationId);
    await Promise.all([this.removeHelpers(from, m.uuid), this.removeHelpers(to, m.uuid)]).catch((err) => this.logger.warn({ err, migration: m.uuid }, 'could not remove volume-copy helpers'));
    const vols = await to.listVolumes({ labels: { [LABEL_MIGRATION]: m.uuid } });
    for (const v of vols) await to.removeVolume(v.Name, { force: true }).catch((err) => this.logger.warn({ err, volume: v.Name }, 'could not discard a staging volume'));
  }

  async logs(resourceId: number, opts: { lines: number; container?: string; timestamps?: boolean }): Promise<string> {
    if (!this.isLive(await this.serverOfResource(resourceId))) return '';
    const plan = await planResource(this.db, resourceId);
    const engine = await this.engineForServerId(plan.serverId);
    // engine kind dispatch
    if (plan.engineKind === 'swarm') return swarmKind.logs(engine, plan, { lines: opts.lines, timestamps: opts.timestamps });
    const parts: string[] = [];
    const chosen = plan.containers.filter((k) => opts.container === undefined || k.spec.labels?.['berth.container'] === opts.container);
    for (const c of chosen) {
      try {
        const { entries } = await engine.containerLogs(c.name, { tail: opts.lines, timestamps: Boolean(opts.timestamps) });
        const lines = entries.map((e) => (opts.timestamps ? `${e.timestamp ?? ''} ${e.line}`.trim() : e.line));
        // Several containers' lines are told apart by a prefix; one container's need none.
        parts.push(chosen.length > 1 ? lines.map((l) => `[${c.name}] ${l}`).join('\n') : lines.join('\n'));
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
    return parts.filter(Boolean).join('\n');
  }

  async dockerCleanup(serverId: number, opts: { allImages: boolean; volumes: boolean; networks: boolean; signal?: AbortSignal }): Promise<string[]> {
    const server = await this.db
      .selectFrom('servers')
      .select([...SERVER_ENGINE_COLUMNS])
      .where('id', '=', serverId)
      .executeTakeFirstOrThrow();
    if (!this.isLive(server)) return recordOnlyRuntime.dockerCleanup(serverId, opts);
    // What the records name, whichever team: a stopped resource's data stays, and so do volumes
    // named after a resource (a migration's staging copies on their target, before the switch).
    const storages = await this.db.selectFrom('storages').select('engine_volume').where('engine_volume', 'is not', null).execute();
    const named = new Set(storages.map((s) => s.engine_volume!));
    const owners = new Set((await this.db.selectFrom('resources').select('uuid').execute()).map((r) => r.uuid));
    const networks = await this.db.selectFrom('destinations').select('network').where('server_id', '=', serverId).execute();
    return dockerCleanup(await this.engineFor(server), {
      ...opts,
      keepVolume: (name) => named.has(name) || owners.has(name.split('-')[0]!),
      keepNetworks: new Set(networks.map((n) => n.network)),
    });
  }

  async removeResource(resourceId: number, opts: RemoveOptions): Promise<string[]> {
    const server = await this.serverOfResource(resourceId);
    if (!this.isLive(server)) return [];
    const r = await this.db.selectFrom('resources').select(['uuid']).where('id', '=', resourceId).executeTakeFirstOrThrow();
    const plan = await planResource(this.db, resourceId);
    const engine = await this.engineFor(server);
    const signal = AbortSignal.timeout(120_000);
    const out: string[] = [];
    // engine kind dispatch
    if (plan.engineKind === 'swarm') out.push(...(await swarmKind.remove(engine, plan, { log: async () => undefined, signal })));
    // Its containers, a rolling update's leftover, and the backup helpers made for it.
    const names = new Set([...plan.containers.map((c) => c.name), ...plan.containers.map((c) => `${c.name}-next`)]);
    for (const c of await engine.listContainers({ all: true, labels: { 'berth.backup-of': r.uuid }, signal })) names.add(containerName(c));
    for (const c of await engine.listContainers({ all: true, labels: { [LABEL_RESOURCE]: r.uuid }, signal })) names.add(containerName(c));
    for (const name of names) if (await engine.removeContainer(name, { force: true, removeVolumes: false, signal })) out.push(`removed container ${name}`);
    if (opts.volumes) {
      for (const v of [...plan.volumes, backupVolumeName(r.uuid)]) {
        if (await engine.removeVolume(v, { force: true, signal })) out.push(`removed volume ${v}`);
      }
    }
    if (opts.networks && !BUILTIN_NETWORKS.has(plan.network)) {
      // Only a network berth made that no container and no other record on this server still uses.
      const others = await this.db
        .selectFrom('resources as r')
        .innerJoin('destinations as d', 'd.id', 'r.destination_id')
        .select('r.id')
        .where('d.server_id', '=', plan.serverId)
        .where('d.network', '=', plan.network)
        .where('r.id', '!=', resourceId)
        .executeTakeFirst();
      if (!others) {
        try {
          const n = await engine.inspectNetwork(plan.network, { signal });
          if (n.Labels?.[LABEL_MANAGED] === 'true' && Object.keys(n.Containers ?? {}).length === 0 && (await engine.removeNetwork(plan.network, { signal })))
            out.push(`removed network ${plan.network}`);
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
        }
      }
    }
    // A service's own network goes with it (and one left from before connect_to_docker_network changed).
    if (opts.networks) out.push(...(await this.removeOwnNetworks(engine, r.uuid, signal)));
    if (opts.cleanup) {
      const pruned = await engine.pruneImages({ danglingOnly: true, signal });
      if (pruned.deleted) out.push(`removed ${pruned.deleted} unused image(s)`);
    }
    // Marked deleting, so its domains are no longer routed.
    await this.routeProxy(plan.serverId, async (line) => void out.push(line));
    return out;
  }

  async removeLeftovers(serverId: number, resourceUuid: string, volumes: string[]): Promise<string[]> {
    const engine = await this.liveEngineOf(serverId);
    if (!engine) return [];
    const signal = AbortSignal.timeout(120_000);
    const out: string[] = [];
    // Right after a stop the engine may still be cleaning the container up (409 on removal, and
    // its volume still in use): a few short retries, then the job sweep's later ones.
    const settled = async <T>(step: () => Promise<T>): Promise<T> => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await step();
        } catch (err) {
          if (!(err instanceof ConflictError) || attempt >= 6) throw err;
          await sleepWithSignal(backoffDelay(attempt, DEFAULT_RETRY), signal);
        }
      }
    };
    for (const c of await engine.listContainers({ all: true, labels: { [LABEL_RESOURCE]: resourceUuid }, signal })) {
      if (await settled(() => engine.removeContainer(containerName(c), { force: true, removeVolumes: false, signal }))) out.push(`removed container ${containerName(c)}`);
    }
    for (const v of volumes) if (await settled(() => engine.removeVolume(v, { force: true, signal }))) out.push(`removed volume ${v}`);
    out.push(...(await this.removeOwnNetworks(engine, resourceUuid, signal)));
    return out;
  }

  async removeMigrationHelpers(serverId: number, migrationUuid: string): Promise<void> {
    const engine = await this.liveEngineOf(serverId);
    if (engine) await this.removeHelpers(engine, migrationUuid, AbortSignal.timeout(120_000));
  }

  /** A server's engine when berth manages it; undefined when the server is gone or record-only. */
  private async liveEngineOf(serverId: number): Promise<EngineClient | undefined> {
    const server = await this.db
      .selectFrom('servers')
      .select([...SERVER_ENGINE_COLUMNS])
      .where('id', '=', serverId)
      .executeTakeFirst();
    return server && this.isLive(server) ? this.engineFor(server) : undefined;
  }

  /** The networks berth made for one resource alone (a service's own), once no container is on them. */
  private async removeOwnNetworks(engine: EngineClient, resourceUuid: string, signal: AbortSignal): Promise<string[]> {
    const out: string[] = [];
    for (const n of await engine.listNetworks({ signal })) {
      if (n.Labels?.[LABEL_RESOURCE] !== resourceUuid || n.Labels?.[LABEL_MANAGED] !== 'true') continue;
      // A list may leave out who is attached; the inspect says.
      if (Object.keys((await engine.inspectNetwork(n.Name, { signal })).Containers ?? {}).length > 0) continue;
      if (await engine.removeNetwork(n.Name, { signal })) out.push(`removed network ${n.Name}`);
    }
    return out;
  }

  async orphans(serverId: number): Promise<Orphans> {
    const server = await this.db
      .selectFrom('servers')
      .select([...SERVER_ENGINE_COLUMNS])
      .where('id', '=', serverId)
      .executeTakeFirstOrThrow();
    if (!this.isLive(server)) return { containers: [], volumes: [] };
    const engine = await this.engineFor(server);
    // Any team's records count: a volume or container a record names is never an orphan.
    const known = new Set((await this.db.selectFrom('resources').select('uuid').execute()).map((r) => r.uuid));
    const named = new Set((await this.db.selectFrom('storages').select('engine_volume').where('engine_volume', 'is not', null).execute()).map((s) => s.engine_volume!));
    const containers = (await engine.listContainers({ all: true, labels: { [LABEL_MANAGED]: 'true' } }))
      .map((c) => ({ name: containerName(c), resource_uuid: c.Labels?.[LABEL_RESOURCE] ?? c.Labels?.['berth.backup-of'] ?? null, state: c.State, migration: c.Labels?.[LABEL_MIGRATION] }))
      .filter((c) => !c.migration && (c.resource_uuid === null || !known.has(c.resource_uuid)))
      .map(({ migration: _m, ...c }) => c);
    // berth's volumes: labelled when berth made them, or named after a resource (backup volumes
    // are made by the engine when a helper first mounts them).
    const owner = (name: string) => /^(?:berth-backups-)?([a-z0-9]{24})(?:-|$)/.exec(name)?.[1] ?? null;
    const volumes = (await engine.listVolumes())
      .filter((v) => (v.Labels?.[LABEL_MANAGED] === 'true' || owner(v.Name) !== null) && !v.Labels?.[LABEL_MIGRATION] && !named.has(v.Name))
      .map((v) => ({ name: v.Name, resource_uuid: owner(v.Name) }))
      .filter((v) => v.resource_uuid === null || !known.has(v.resource_uuid));
    return { containers, volumes };
  }

  /** An execution with its backup settings and its database. */
  private async backupParts(executionId: number) {
    const e = await this.db.selectFrom('scheduled_database_backup_executions').selectAll().where('id', '=', executionId).executeTakeFirstOrThrow();
    const b = await this.db.selectFrom('scheduled_database_backups').selectAll().where('id', '=', e.backup_id).executeTakeFirstOrThrow();
    const r = await this.db.selectFrom('resources').selectAll().where('id', '=', b.resource_id).executeTakeFirstOrThrow();
    return { e, b, r, c: JSON.parse(r.config) as DatabaseConfig, kind: r.kind as DatabaseKind };
  }

  /**
   * Runs a script in a helper container made from the database's image, with the database's
   * backup volume at /backups. With `shareNetwork`, the helper joins the running database
   * container's network namespace (NetworkMode container:<id>) and reaches it on 127.0.0.1;
   * otherwise it has no network. The helper is removed whatever happens.
   */
  private async runHelper(
    engine: EngineClient,
    r: { uuid: string },
    image: string,
    o: { name: string; env: string[]; script: string; shareNetwork: boolean; signal: AbortSignal; mounts?: { volume: string; target: string; readOnly?: boolean }[] },
  ): Promise<{ exitCode: number; logs: string }> {
    let networkMode = 'none';
    if (o.shareNetwork) {
      let running = false;
      let id = '';
      try {
        const info = await engine.inspectContainer(r.uuid, { signal: o.signal });
        running = info.State.Running;
        id = info.Id;
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
      if (!running) throw new Error('The database is not running on its server: start it first.');
      networkMode = `container:${id}`;
    }
    await engine.removeContainer(o.name, { force: true }).catch(() => undefined);
    await engine.createContainer(
      o.name,
      {
        image,
        entrypoint: ['sh', '-c'],
        cmd: [o.script],
        env: o.env,
        user: '0',
        networkMode,
        volumes: [...(o.mounts ?? []), { volume: backupVolumeName(r.uuid), target: BACKUP_DIR }],
        labels: { [LABEL_MANAGED]: 'true', 'berth.backup-of': r.uuid },
      },
      { signal: o.signal },
    );
    try {
      await engine.startContainer(o.name, { signal: o.signal });
      const w = await engine.waitContainer(o.name, { signal: o.signal });
      const { entries } = await engine.containerLogs(o.name, { tail: 'all', tty: false, maxBytes: 256 * 1024 });
      return { exitCode: w.StatusCode, logs: entries.map((e) => e.line).join('\n') };
    } finally {
      await engine.removeContainer(o.name, { force: true }).catch(() => undefined);
    }
  }

  async runBackup(executionId: number, signal: AbortSignal): Promise<BackupOutcome> {
    const { e, b, r, c, kind } = await this.backupParts(executionId);
    if (!this.isLive(await this.serverOfResource(r.id))) return recordOnlyRuntime.runBackup(executionId, signal);
    const plan = dumpPlan(kind, c.fields, { dumpAll: b.dump_all === 1, databases: b.databases_to_backup, at: new Date(e.created_at) });
    const engine = await this.engineFor(await this.serverOfResource(r.id));
    const out = await this.runHelper(engine, r, c.image, { name: `${r.uuid}-backup-${e.uuid}`, env: plan.env, script: plan.script, shareNetwork: true, signal });
    const { size, logs } = sizedOutput(out.logs);
    if (out.exitCode !== 0 || !size) {
      const err = new Error(`The backup failed (exit code ${out.exitCode}): ${lastLines(logs)}`);
      (err as Error & { logs?: string }).logs = logs;
      throw err;
    }
    return { filename: plan.filename, size, databaseName: plan.databaseName, logs };
  }

  async restoreBackup(executionId: number, signal: AbortSignal): Promise<{ logs: string }> {
    const { e, r, c, kind } = await this.backupParts(executionId);
    if (!this.isLive(await this.serverOfResource(r.id))) return recordOnlyRuntime.restoreBackup(executionId, signal);
    if (!e.filename || !safeBackupFile(e.filename)) throw new Error('The execution has no backup file.');
    const plan = restorePlan(kind, c.fields, e.filename);
    const engine = await this.engineFor(await this.serverOfResource(r.id));
    const script = `[ -s ${BACKUP_DIR}/${e.filename} ] || { echo "the backup file is gone from the backup volume" >&2; exit 4; }\n${plan.script}`;
    const out = await this.runHelper(engine, r, c.image, { name: `${r.uuid}-restore-${e.uuid}`, env: plan.env, script, shareNetwork: true, signal });
    if (out.exitCode !== 0) {
      const err = new Error(`The restore failed (exit code ${out.exitCode}): ${out.logs.split('\n').filter(Boolean).slice(-3).join(' / ') || 'no output'}`);
      (err as Error & { logs?: string }).logs = out.logs;
      throw err;
    }
    return { logs: out.logs };
  }

  async removeBackupFiles(resourceId: number, filenames: string[]): Promise<void> {
    const files = filenames.filter(safeBackupFile);
    if (!files.length || !this.isLive(await this.serverOfResource(resourceId))) return;
    const r = await this.db.selectFrom('resources').select(['uuid', 'config']).where('id', '=', resourceId).executeTakeFirstOrThrow();
    // A database's own image (its backups), else the helper image (an application's or service's volume backups).
    const c = JSON.parse(r.config) as Partial<DatabaseConfig>;
    const engine = await this.engineFor(await this.serverOfResource(resourceId));
    const script = `cd ${BACKUP_DIR} && rm -f -- ${files.map((f) => `'${f}'`).join(' ')}`;
    const out = await this.runHelper(engine, r, c.image ?? this.helperImage, {
      name: `${r.uuid}-backup-prune-${Date.now()}`,
      env: [],
      script,
      shareNetwork: false,
      signal: AbortSignal.timeout(120_000),
    });
    if (out.exitCode !== 0) throw new Error(`Removing backup files failed: ${out.logs}`);
  }

  /**
   * A storage's volume, read-only, archived by a helper container (BERTH_HELPER_IMAGE, no network)
   * into the resource's backup volume. A partial archive is removed; an empty volume still gives
   * a valid (small) archive.
   */
  async runVolumeBackup(storageId: number, at: Date, signal: AbortSignal): Promise<{ filename: string; size: number; logs: string }> {
    const s = await this.db
      .selectFrom('storages as st')
      .innerJoin('resources as r', 'r.id', 'st.resource_id')
      .select(['st.name', 'st.engine_volume', 'r.id as resource_id', 'r.uuid'])
      .where('st.id', '=', storageId)
      .executeTakeFirstOrThrow();
    const server = await this.serverOfResource(s.resource_id);
    if (!this.isLive(server)) return recordOnlyRuntime.runVolumeBackup(storageId, at, signal);
    const engine = await this.engineFor(server);
    const volume = s.engine_volume ?? volumeName(s.uuid, s.name);
    const slug = s.name.replace(/[^A-Za-z0-9_.-]/g, '-');
    const filename = `volume-${slug}-${at
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z')}.tar.gz`;
    const { ensureImage } = (await loadEngineModules()).engine;
    await ensureImage(engine, this.helperImage, { signal });
    const file = `${BACKUP_DIR}/${filename}`;
    const script = `tar -czf "${file}" -C /source . || { rm -f "${file}"; exit 1; }; echo "${SIZE_MARKER}$(wc -c < "${file}")"`;
    const out = await this.runHelper(engine, s, this.helperImage, {
      name: `${s.uuid}-volume-backup-${Date.now().toString(36)}`,
      env: [],
      script,
      shareNetwork: false,
      signal,
      mounts: [{ volume, target: '/source', readOnly: true }],
    });
    const { size, logs } = sizedOutput(out.logs);
    if (out.exitCode !== 0 || size === null) throw Object.assign(new Error(`The volume backup failed (exit code ${out.exitCode}): ${lastLines(logs)}`), { logs });
    return { filename, size, logs };
  }

  async execCommand(resourceId: number, container: string | null, command: string, opts: { signal: AbortSignal; maxChars: number }): Promise<{ exitCode: number; output: string; head: string }> {
    const server = await this.serverOfResource(resourceId);
    if (!this.isLive(server)) return recordOnlyRuntime.execCommand(resourceId, container, command, opts);
    const plan = await planResource(this.db, resourceId);
    const only = plan.containers.length === 1 ? plan.containers[0] : undefined;
    // An application's one container runs its tasks whatever name the task carries (as Coolify does).
    const c = container === null || (only && !only.spec.labels?.['berth.container']) ? only : plan.containers.find((k) => k.spec.labels?.['berth.container'] === container);
    if (!c)
      throw new Error(
        container === null
          ? `Name the container to run in: one of ${plan.containers.map((k) => k.spec.labels?.['berth.container'] ?? k.name).join(', ')}.`
          : `The service has no container ${container}.`,
      );
    const what = c.spec.labels?.['berth.container'] ? 'service' : 'application';
    return execTask(await this.engineFor(server), c.name, command, { ...opts, what });
  }

  async close(): Promise<void> {
    if (this.connections) await (await this.connections).close();
  }
}
