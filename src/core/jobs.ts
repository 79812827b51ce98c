import type { Db } from '../store/db.js';
import type { DeploymentKind } from './model/deployment.js';
import type { MigrationProgress, RemoveOptions } from './runtime.js';

/** A deployment to record and queue: its resource, its server, what it does, and for whom. */
export interface DeploymentRequest {
  teamId: number;
  resourceId: number;
  serverId: number;
  kind: DeploymentKind;
  force: boolean;
  rollbackTag?: string;
  /** A pull request's preview (0 or absent: the application itself). */
  pullRequestId?: number;
}

/**
 * What the core asks of the workers (src/workers implements it): operations record intent in the
 * store and hand the slow part over here, so a deployment, migration, deletion, backup or cleanup
 * runs on the per-server queues with its lease, retries and notifications, whichever door asked.
 */
export interface Jobs {
  /** Puts a deployment on its server's queue; 429 "Deployment queue is full." when it is. */
  enqueue(deploymentId: number, serverId: number): Promise<{ done: Promise<void> }>;
  /** Cancels a queued or running deployment; false when it already ended. */
  cancel(deploymentId: number): Promise<boolean>;
  /** Queues a migration's volume transfer on the target's queue; `onProgress` hears every update. */
  enqueueMigration(migrationId: number, serverId: number, onProgress?: (p: MigrationProgress) => void): Promise<{ done: Promise<void> }>;
  /** Cancels a migration before its switch; false when it has ended or is switching. */
  cancelMigration(migrationId: number): Promise<boolean>;
  /**
   * Records a deployment and puts it on its server's queue; when the queue is full the record is
   * removed again and 429 "Deployment queue is full." is thrown: nothing half-queued stays.
   */
  queueDeployment(d: DeploymentRequest): Promise<{ id: number; uuid: string; done: Promise<void> }>;
  /** Settles when a deployment queued by this process has ended (at once when it is not one of them). */
  deploymentEnded(deploymentId: number): Promise<void>;
  /** In a migration's switch transaction: records the start deployment of start_on_destination on the target. */
  recordMovedStart(trx: Db, m: { id: number; team_id: number; resource_id: number; to_destination_id: number }): Promise<void>;
  /** Queues the start a switched migration recorded; a full queue or failure is recorded on the migration. */
  startMoved(migrationId: number): Promise<{ uuid: string; done: Promise<void> } | { error: string }>;
  /** Runs a scheduled task once, now, in the background; the execution's uuid. */
  runScheduledTask(taskId: number): Promise<string>;
  /** Removes what a switched migration left on its source (retried later when that fails). */
  removeLeftovers(migrationId: number): Promise<void>;
  /** Deletes a resource from its engine, then its records; when the engine fails it stays marked and is retried. */
  deleteResource(resourceId: number, flags: RemoveOptions): Promise<{ done: boolean; error?: string; log: string[] }>;
  /** Claims an on-demand execution of a database backup and runs it in the background; the execution's id. */
  runDatabaseBackup(backupId: number): Promise<number>;
  /**
   * Starts a restore of a backup execution's file in the background (recorded on the execution);
   * null when a restore of it is running already. `done` settles with its outcome.
   */
  restoreDatabaseBackup(executionId: number, o: { timeoutS: number; okMessage: string }): Promise<{ done: Promise<{ ok: boolean; message: string; logs: string }> } | null>;
  /** Claims an on-demand execution of a volume backup and runs it in the background; the execution's uuid. */
  runVolumeBackup(backupId: number): Promise<string>;
  /** Runs a recorded Docker cleanup execution in the background (its outcome goes on the row and to the team's channels). */
  runDockerCleanup(executionId: number, opts: { volumes: boolean; networks: boolean }): void;
}
