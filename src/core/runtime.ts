import type { Db } from '../store/db.js';
import { engineTargetOf } from './engine-target.js';
import type { LogEntry } from './model/container-spec.js';

/**
 * What the core asks of the machinery that runs things on engines. The core records intent and
 * state; a runtime makes it real. A server berth cannot reach (no engine endpoint, no key) is not
 * managed: for it, `recordOnlyRuntime` keeps the records and says so in every result.
 */
export interface ServerEngine {
  id: number;
  team_id: number;
  ip: string;
  port: number;
  user: string;
  private_key_id: number | null;
  engine_endpoint: string | null;
  engine_tls: string | null;
  host_key_fingerprint: string | null;
  host_access: number;
}

/** The server columns a runtime reads (ServerEngine's). */
export const SERVER_ENGINE_COLUMNS = ['id', 'team_id', 'ip', 'port', 'user', 'private_key_id', 'engine_endpoint', 'engine_tls', 'host_key_fingerprint', 'host_access'] as const;

export interface ValidationResult {
  reachable: boolean;
  usable: boolean;
  logs: string;
  /** The SSH host key pinned after this validation (undefined: not an SSH server, unchanged). */
  hostKeyFingerprint?: string | null;
  /** The engine's part in a Docker Swarm (GET /info): a manager, a worker, or none (undefined: not read). */
  swarm?: 'manager' | 'worker' | 'none';
}

/**
 * Whether actions on a server reach an engine. An SSH server acts only once its host key is
 * pinned by a validate: before that, berth has never connected to it, so nothing of berth's can
 * be running there, and connecting would trust whatever answers.
 */
export function reachesEngine(server: ServerEngine): boolean {
  const target = engineTargetOf(server);
  return target !== null && (target.transport !== 'ssh' || server.host_key_fingerprint !== null);
}

export interface RuntimeJobContext {
  db: Db;
  /** Appends to the deployment's log (sensitive). */
  log(line: string): Promise<void>;
  signal: AbortSignal;
}

/** Where a migration is: copying while the resource runs, the last pass after it stopped, checking, switching. */
export type MigrationPhase = 'queued' | 'pre-copy' | 'final-sync' | 'verify' | 'switch' | 'done';

export interface MigrationProgress {
  phase: MigrationPhase;
  /** Copy rounds started (1: the full copy; then rounds that send only what changed). */
  round: number;
  volumes_total: number;
  volumes_done: number;
  /** Archive bytes sent so far, every round counted (only grows). */
  bytes: number;
  /** Bytes of the resource's files at the last snapshot (what one full copy would send). */
  bytes_total: number;
  /**
   * Archive bytes of everything chosen to send so far (the volumes' measured sizes before the full
   * copy, then each later round's choice as it is made): the `total` of progress notifications.
   */
  bytes_expected?: number;
  current_volume?: string;
}

export interface MigrationJobContext {
  db: Db;
  signal: AbortSignal;
  progress(p: MigrationProgress): Promise<void>;
  /**
   * Stops the resource on its source, cleanly (a database gets its type's grace period); called
   * once, when the remaining difference is small. The pause a migration causes starts here.
   */
  stopSource(): Promise<void>;
}

export interface MovedVolumes {
  /** Staging volume by storage id. */
  staged: Map<number, string>;
  /** Removes what the copy still runs on both engines (its helpers mount the volumes); idempotent. */
  release(): Promise<void>;
}

export interface Runtime {
  /** True when actions on this server reach a real engine; false when only records change. */
  isLive(server: ServerEngine): boolean;
  validateServer(server: ServerEngine, opts?: { acceptHostKey?: boolean }): Promise<ValidationResult>;
  /** Runs a deployment (deploy, start, stop, restart) of a resource; resolves with its final status. */
  runDeployment(deploymentId: number, ctx: RuntimeJobContext): Promise<'finished' | 'failed'>;
  /** Stops a resource's containers where it lives now (with its type's grace period). */
  stopResource(resourceId: number, signal?: AbortSignal): Promise<void>;
  /** Starts a resource's containers where it lives now (a failed migration puts it back). */
  startResource(resourceId: number, signal?: AbortSignal): Promise<void>;
  /**
   * Moves a migrating resource's volumes into staging volumes on the target: copies while it runs,
   * calls ctx.stopSource(), sends the last difference and verifies. Resolves the staging volumes by
   * storage id; the caller switches the records, then calls `release()` (the copy's helpers are
   * removed then, out of the pause; before a source volume can be removed). Sources are only read.
   */
  moveVolumes(migrationId: number, ctx: MigrationJobContext): Promise<MovedVolumes>;
  /** Removes staging volumes a failed migration left on the target (never a source volume). */
  discardStaging(migrationId: number): Promise<void>;
  /**
   * What in a resource's containers the server of another destination does not allow (host-reaching
   * settings need host access there), in words; null when it may run there. Reads records only.
   */
  placementRefusal(resourceId: number, destinationId: number): Promise<string | null>;
  /** Recent logs of a resource's containers. */
  /** The last lines of a resource's containers (one compose container with `container`), each with its engine timestamp when `timestamps`. */
  logs(resourceId: number, opts: { lines: number; container?: string; timestamps?: boolean }): Promise<string>;
  /** Starts, stops or restarts one container of a service (its compose service name); what happened. */
  serviceContainer(resourceId: number, container: string, action: 'start' | 'stop' | 'restart'): Promise<string>;
  /** Frees space on a server's engine (unused images, build cache; volumes and networks on request); the log lines. */
  dockerCleanup(serverId: number, opts: { allImages: boolean; volumes: boolean; networks: boolean; signal?: AbortSignal }): Promise<string[]>;
  /**
   * Runs one backup execution (its row says which backup and database): dumps the running
   * database into its backup volume. Resolves with the file and the tool's output; throws with a
   * clear message when nothing usable was written (the caller records a failed execution).
   */
  runBackup(executionId: number, signal: AbortSignal): Promise<BackupOutcome>;
  /** Loads an execution's file back into the running database; throws when the restore failed. */
  restoreBackup(executionId: number, signal: AbortSignal): Promise<{ logs: string }>;
  /** Removes backup files of a database from its backup volume (missing files are fine). */
  removeBackupFiles(resourceId: number, filenames: string[]): Promise<void>;
  /** Archives one storage's volume (tar.gz) into its resource's backup volume; the file and its size. */
  runVolumeBackup(storageId: number, at: Date, signal: AbortSignal): Promise<{ filename: string; size: number; logs: string }>;
  /**
   * Runs a scheduled task's shell command inside the resource's running container (a service's
   * by its compose service name; null: its only container), over the server's engine API. The
   * exit code and output (its last `maxChars`); a missing or stopped container throws with a
   * clear message. When `signal` aborts, the command is killed inside the container and a
   * TaskTimeoutError (runtime/task-exec.ts) is thrown with the output so far.
   */
  execCommand(resourceId: number, container: string | null, command: string, opts: { signal: AbortSignal; maxChars: number }): Promise<{ exitCode: number; output: string; head: string }>;
  /**
   * Follows the engines of managed servers and keeps each resource's observed state in the
   * store (one instance per server at a time, by lease). `instanceId` names this process's leases.
   */
  startWatching(instanceId: string): void;
  stopWatching(): Promise<void>;
  /** Looks at a resource's containers now and stores what the engine says; the status, or null when berth does not manage its server. */
  observeResource(resourceId: number): Promise<string | null>;
  /**
   * Removes what a resource has on its engine: its containers (and helpers), with `volumes` its
   * volumes and backup volume, with `networks` berth-made networks nothing else uses, with
   * `cleanup` the engine's dangling images. The log lines; throws when the engine cannot be reached
   * (nothing is reported removed that was not).
   */
  removeResource(resourceId: number, opts: RemoveOptions): Promise<string[]>;
  /**
   * Removes what a resource left on a server it no longer lives on (after a migration): its
   * containers there and the named volumes. The log lines; throws when the engine cannot be reached.
   */
  removeLeftovers(serverId: number, resourceUuid: string, volumes: string[]): Promise<string[]>;
  /** Removes a pull request's preview of an application from its engine: container, images, and volumes when asked. The log lines; throws when the engine cannot be reached. */
  removePreview(resourceId: number, pullRequestId: number, opts: { volumes: boolean }): Promise<string[]>;
  /** Removes a migration's volume-copy helper containers from a server (by its label); throws when the engine cannot be reached. */
  removeMigrationHelpers(serverId: number, migrationUuid: string): Promise<void>;
  /** berth-labelled containers and volumes on a server that no record names. */
  orphans(serverId: number): Promise<Orphans>;
  /** The tags of an application's image repository its engine holds (what a rollback can run), newest first; null when berth does not manage its server. */
  applicationImages(resourceId: number): Promise<ApplicationImage[] | null>;
  /**
   * Makes a server's proxy match the records (its settings, every domain on it): started when a
   * domain needs it (or `start`), replaced with `recreate`, removed with proxy_type none. No-op
   * when berth does not manage the server.
   */
  syncProxy(serverId: number, opts?: { start?: boolean; recreate?: boolean; signal?: AbortSignal; log?: (line: string) => Promise<void> }): Promise<void>;
  /** The proxy container's state as the server's engine says (running, exited, ...); null: no proxy there, or not managed. */
  proxyStatus(serverId: number): Promise<string | null>;
  /** The running containers of berth's resources on a server (helpers left out), for its log drains; null when berth does not manage it. */
  drainContainers(serverId: number, signal?: AbortSignal): Promise<DrainContainer[] | null>;
  /** Follows one container's log lines written from `since` (Unix seconds) until it stops or `signal` aborts. */
  followLogs(serverId: number, containerId: string, opts: { since: number; signal: AbortSignal; onEntry: (e: LogEntry) => void }): Promise<void>;
  close(): Promise<void>;
}

/** A container whose lines a log drain ships. */
export interface DrainContainer {
  id: string;
  name: string;
  resourceUuid: string;
}

export interface ApplicationImage {
  tag: string;
  created_at: string;
}

export interface RemoveOptions {
  volumes: boolean;
  networks: boolean;
  cleanup: boolean;
}

export interface Orphans {
  containers: { name: string; resource_uuid: string | null; state: string }[];
  volumes: { name: string; resource_uuid: string | null }[];
}

export interface BackupOutcome {
  filename: string;
  size: number;
  databaseName: string | null;
  logs: string;
}

export const RECORD_ONLY_NOTE =
  'The server has no engine berth can reach (no engine endpoint or private key, or an SSH server not validated yet): berth did not act on any engine. Validate the server to manage it.';

export const recordOnlyRuntime: Runtime = {
  isLive: () => false,
  async validateServer(server) {
    return {
      reachable: false,
      usable: false,
      logs: engineTargetOf(server) ? 'No engine runtime is available in this process.' : 'The server has neither an engine_endpoint nor a private key, so berth cannot reach it.',
    };
  },
  // Nothing ran, so the deployment did not succeed and the resource's status stays as it was:
  // reporting `running` for a container no engine has would be berth's word against the engine's.
  async runDeployment(_id, ctx) {
    await ctx.log(RECORD_ONLY_NOTE);
    return 'failed';
  },
  async stopResource() {},
  async startResource() {},
  async moveVolumes() {
    throw new Error('Volume data moves only between servers with validated engines.');
  },
  async discardStaging() {},
  async placementRefusal() {
    return null;
  },
  async logs() {
    return '';
  },
  async serviceContainer() {
    return RECORD_ONLY_NOTE;
  },
  async dockerCleanup() {
    throw new Error(RECORD_ONLY_NOTE);
  },
  async runBackup() {
    throw new Error(`Nothing was backed up. ${RECORD_ONLY_NOTE}`);
  },
  async restoreBackup() {
    return { logs: `Nothing was restored. ${RECORD_ONLY_NOTE}` };
  },
  async removeBackupFiles() {},
  async runVolumeBackup() {
    throw new Error(`Nothing was backed up. ${RECORD_ONLY_NOTE}`);
  },
  async execCommand() {
    throw new Error(`Nothing was run. ${RECORD_ONLY_NOTE}`);
  },
  startWatching() {},
  async stopWatching() {},
  async applicationImages() {
    return null;
  },
  async syncProxy() {},
  async proxyStatus() {
    return null;
  },
  async drainContainers() {
    return null;
  },
  async followLogs() {},
  async observeResource() {
    return null;
  },
  async removeResource() {
    return [];
  },
  async removeLeftovers() {
    return [];
  },
  async removePreview() {
    return [];
  },
  async removeMigrationHelpers() {},
  async orphans() {
    return { containers: [], volumes: [] };
  },
  async close() {},
};
