import type { ResourceObservation } from '../core/observed-status.js';
import type { EngineClient } from './engine-client.js';
import type { EngineKindType, Plan, PlannedContainer } from './plan.js';

export type { EngineKindType } from './plan.js';

/** What a kind's work may say (the deployment's log) and when it must give up. */
export interface KindContext {
  log(line: string): Promise<void>;
  signal: AbortSignal;
  /** berth's own log, for what the deployment's reader need not see (a stop that failed after the exit). */
  warn?(fields: Record<string, unknown>, message: string): void;
}

/**
 * An engine kind: how a resource's plan runs on one kind of engine. The runtime reads the records,
 * makes the plan (plan.ts), picks the kind by the destination's type and hands it the server's
 * engine client; a kind never reads or writes the store, so a new kind (Kubernetes) is a new folder
 * beside `standalone/` and `swarm/` plus one line in the kind table, not edits across the runtime.
 * Volumes, backups, exec and migration copies stay with the runtime: they work on containers and
 * volumes, which every kind has; the kind only names the container a command runs in (execTarget).
 */
export interface EngineKind {
  readonly type: EngineKindType;
  /** Replaces what runs with the plan (a rolling update where the kind has one); volumes persist. */
  deploy(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void>;
  /** Starts what exists and waits until it runs; deploys when anything is missing. */
  start(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void>;
  /** Restarts in place; false when something is missing (the caller deploys instead). */
  restart(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<boolean>;
  /**
   * Stops everything of the plan until nothing runs; data stays. `untilExited`: done once the
   * processes have exited, leaving the engine's own clean-up to finish (a migration's pause).
   */
  stop(engine: EngineClient, plan: Plan, ctx: KindContext, opts?: { untilExited?: boolean }): Promise<void>;
  /** What runs now, in Coolify's status words, read from the engine only. */
  observe(engine: EngineClient, plan: Plan, wanted: 'running' | 'exited', signal?: AbortSignal): Promise<ResourceObservation>;
  /** Removes the resource's workloads (containers, services, leftovers of an update); lines saying what went. */
  remove(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<string[]>;
  /**
   * The engine container a command (a scheduled task, an exec) runs in for the planned container
   * `c`: its id or name on this engine. A 409 BerthError saying why when none runs.
   */
  execTarget(engine: EngineClient, plan: Plan, c: PlannedContainer, signal?: AbortSignal): Promise<string>;
  /** The last lines of the resource's logs (one compose container's with `container`). */
  logs(engine: EngineClient, plan: Plan, opts: { lines: number; container?: string; timestamps?: boolean; signal?: AbortSignal }): Promise<string>;
}
