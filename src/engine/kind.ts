import type { ResourceObservation } from '../core/observed-status.js';
import type { EngineClient } from './engine-client.js';
import type { Plan } from './plan.js';

/**
 * The engine kinds berth runs resources on, by a destination's `type` (Coolify's words):
 * `standalone` is one Docker-compatible engine's containers; `swarm` is a swarm manager's services.
 */
export type EngineKindType = 'standalone' | 'swarm';

/** What a kind's work may say (the deployment's log) and when it must give up. */
export interface KindContext {
  log(line: string): Promise<void>;
  signal: AbortSignal;
}

/**
 * An engine kind: how a resource's plan runs on one kind of engine. The runtime reads the records,
 * makes the plan (plan.ts), picks the kind by the destination's type and hands it the server's
 * engine client; a kind never reads or writes the store, so a new kind (Kubernetes) is a new folder
 * beside `standalone/` and `swarm/` plus one line in the kind table, not edits across the runtime.
 * Volumes, backups, exec and migration copies stay with the runtime: they work on containers and
 * volumes, which every kind has.
 */
export interface EngineKind {
  readonly type: EngineKindType;
  /** Replaces what runs with the plan (a rolling update where the kind has one); volumes persist. */
  deploy(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void>;
  /** Starts what exists and waits until it runs; deploys when anything is missing. */
  start(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void>;
  /** Restarts in place; false when something is missing (the caller deploys instead). */
  restart(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<boolean>;
  /** Stops everything of the plan until nothing runs; data stays. */
  stop(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void>;
  /** What runs now, in Coolify's status words, read from the engine only. */
  observe(engine: EngineClient, plan: Plan, wanted: 'running' | 'exited', signal?: AbortSignal): Promise<ResourceObservation>;
  /** Removes the resource's workloads (containers, services, leftovers of an update); lines saying what went. */
  remove(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<string[]>;
  /** The last lines of the resource's logs (one compose container's with `container`). */
  logs(engine: EngineClient, plan: Plan, opts: { lines: number; container?: string; timestamps?: boolean; signal?: AbortSignal }): Promise<string>;
}

/** A deployment's job on a kind: stop, start, restart (a deploy when something is missing), or deploy. */
export async function runKindJob(kind: EngineKind, job: string, engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void> {
  if (job === 'stop') return kind.stop(engine, plan, ctx);
  if (job === 'start') return kind.start(engine, plan, ctx);
  if (job === 'restart' && (await kind.restart(engine, plan, ctx))) return ctx.log('restarted');
  return kind.deploy(engine, plan, ctx);
}
