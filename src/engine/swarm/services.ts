/**
 * What the swarm kind does with one service, for an application's and for each service of a
 * stack: the overlay network, sending a spec (create, or update at the version read), waiting
 * for its tasks, scaling to zero, and reading its tasks as an observation.
 */
import type { ContainerObservation, ResourceObservation } from '../../core/observed-status.js';
import { BerthError } from '../../errors.js';
import type { EngineClient } from '../engine-client.js';
import { NotFoundError } from '../engine-errors.js';
import type { KindContext } from '../kind.js';
import { LABEL_MANAGED } from '../plan.js';
import type { ServiceInspect, ServiceSpec, SwarmTask } from '../docker/swarm.js';

export const CONVERGE_TIMEOUT_MS = 180_000;
export const POLL_MS = 250;

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const abort = () => (clearTimeout(t), reject(signal!.reason));
    const t = setTimeout(() => (signal?.removeEventListener('abort', abort), resolve()), ms);
    signal?.addEventListener('abort', abort, { once: true });
  });

/** Tasks the orchestrator wants running and that run (a health check, when declared, has passed: swarm holds them in `starting` until then). */
export const runningOf = (tasks: SwarmTask[]) => tasks.filter((t) => t.DesiredState === 'running' && t.Status.State === 'running');

/** The overlay network of the destination (or a service's own): made attachable (the proxy joins it) when missing. */
export async function ensureOverlay(engine: EngineClient, network: string, ctx: KindContext, labels: Record<string, string> = {}): Promise<void> {
  try {
    const n = await engine.inspectNetwork(network, { signal: ctx.signal });
    if (n.Driver === 'overlay') return;
    // A bridge of the same name left from when the server was standalone: replaced only when berth made it and nothing uses it.
    if (n.Labels?.[LABEL_MANAGED] !== 'true' || Object.keys(n.Containers ?? {}).length) {
      throw new Error(
        `The network ${network} exists on this swarm manager as a ${n.Driver} network in use; a swarm destination needs it to be an overlay network. Remove it, or use a destination with another network.`,
      );
    }
    await engine.removeNetwork(network, { signal: ctx.signal });
    await ctx.log(`removed the ${n.Driver} network ${network} (a swarm destination's network is an overlay)`);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  await engine.createNetwork(network, { driver: 'overlay', attachable: true, labels: { ...labels, [LABEL_MANAGED]: 'true' }, signal: ctx.signal });
  await ctx.log(`created overlay network ${network}`);
}

/** Named volumes made on the manager with berth's labels so a delete finds them; other nodes make theirs at their first task. */
export async function ensureVolumes(engine: EngineClient, volumes: string[], resource: string, ctx: KindContext): Promise<void> {
  for (const v of volumes) {
    try {
      await engine.inspectVolume(v, { signal: ctx.signal });
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      await engine.createVolume(v, { labels: { [LABEL_MANAGED]: 'true', 'berth.resource': resource }, signal: ctx.signal });
      await ctx.log(`created volume ${v}`);
    }
  }
}

/**
 * Sends a spec: creates the service, or updates it at the version read (start-first rolling).
 * `specFor` gets the ForceUpdate counter to send: kept as it was unless a restart asks for a new
 * one, so an unchanged spec changes nothing.
 */
export async function applySpec(engine: EngineClient, name: string, specFor: (forceUpdate: number) => ServiceSpec, ctx: KindContext, force = false): Promise<ServiceInspect | null> {
  const current = await engine.inspectService(name, { signal: ctx.signal });
  const spec = specFor((current?.Spec.TaskTemplate.ForceUpdate ?? 0) + (force ? 1 : 0));
  const what = `${spec.Mode.Replicated.Replicas} replica(s), ${String(spec.TaskTemplate.ContainerSpec.Image)}`;
  if (!current) {
    await engine.createService(spec, { signal: ctx.signal });
    await ctx.log(`created swarm service ${name} (${what})`);
  } else {
    await engine.updateService(name, current.Version.Index, spec, { signal: ctx.signal });
    await ctx.log(`updated swarm service ${name} (${what}, start-first)`);
  }
  return current;
}

/** Whether an update changed what the tasks run (both specs as the engine reads them back). */
const templateChanged = (before: ServiceInspect, now: ServiceInspect) => JSON.stringify(before.Spec.TaskTemplate) !== JSON.stringify(now.Spec.TaskTemplate);

/** Whether the service shows an update (or rollback) begun after the one `before` knew of. */
const updateStartedSince = (before: ServiceInspect, now: ServiceInspect) => Boolean(now.UpdateStatus?.StartedAt) && now.UpdateStatus?.StartedAt !== before.UpdateStatus?.StartedAt;

/**
 * Waits until the service runs `replicas` tasks of its current spec and no update is under way;
 * a rolled-back or paused update fails with the engine's message.
 */
export async function converge(engine: EngineClient, name: string, replicas: number, ctx: KindContext, before: ServiceInspect | null = null, timeoutMs = CONVERGE_TIMEOUT_MS): Promise<void> {
  const until = Date.now() + timeoutMs;
  let said = '';
  for (;;) {
    const s = await engine.inspectService(name, { signal: ctx.signal });
    if (!s) throw new Error(`The service ${name} disappeared during the deployment.`);
    // A new task template starts an update, but not at once: until its status shows, the old
    // tasks still run and the last update's `completed` still stands, which would read as done.
    const pending = before !== null && templateChanged(before, s) && !updateStartedSince(before, s);
    const state = pending ? 'pending' : (s.UpdateStatus?.State ?? '');
    if (state === 'rollback_completed' || state === 'rollback_paused' || state === 'paused') {
      throw new Error(`The update of ${name} did not complete (${state}): ${s.UpdateStatus?.Message ?? 'no message'}. Swarm keeps the previous tasks running.`);
    }
    const tasks = await engine.listTasks(name, { desiredState: 'running', signal: ctx.signal });
    const running = runningOf(tasks);
    const line = `${name}: tasks running ${running.length}/${replicas}${state ? ` (update ${state})` : ''}`;
    if (line !== said) await ctx.log((said = line));
    const updating = state === 'pending' || state === 'updating' || state === 'rollback_started';
    if (!updating && running.length === replicas && tasks.length === replicas) return;
    if (Date.now() > until) {
      const failed = tasks.find((t) => t.Status.Err)?.Status.Err;
      throw new Error(`The service ${name} did not reach ${replicas} running task(s) in ${timeoutMs / 1000} s (${running.length} run)${failed ? `: ${failed}` : ''}.`);
    }
    await sleep(POLL_MS, ctx.signal);
  }
}

/** Scales a service to zero (it and its settings stay, so a start is a scale back) and waits until no task runs; false when there is no such service. */
export async function scaleToZero(engine: EngineClient, name: string, ctx: KindContext): Promise<boolean> {
  const current = await engine.inspectService(name, { signal: ctx.signal });
  if (!current) return false;
  const spec = { ...current.Spec, Mode: { Replicated: { Replicas: 0 } } };
  await engine.updateService(name, current.Version.Index, spec, { signal: ctx.signal });
  await ctx.log(`scaled swarm service ${name} to 0`);
  const until = Date.now() + CONVERGE_TIMEOUT_MS;
  while (runningOf(await engine.listTasks(name, { signal: ctx.signal })).length > 0 || (await taskContainers(engine, name, ctx.signal)) > 0) {
    if (Date.now() > until) throw new Error(`The tasks of ${name} did not stop in ${CONVERGE_TIMEOUT_MS / 1000} s.`);
    await sleep(POLL_MS, ctx.signal);
  }
  return true;
}

/** Endpoints on a network other than a swarm load balancer's (`lb-<network>`, the engine's own), whose container name passes `mine`; 0 when it is gone. */
export async function networkEndpoints(engine: EngineClient, network: string, signal?: AbortSignal, mine: (name: string) => boolean = () => true): Promise<number> {
  try {
    const containers = ((await engine.inspectNetwork(network, { signal })).Containers ?? {}) as Record<string, { Name?: string }>;
    return Object.entries(containers).filter(([k, c]) => !k.startsWith('lb-') && mine(c.Name ?? k)).length;
  } catch (err) {
    if (err instanceof NotFoundError) return 0;
    throw err;
  }
}

/** The service's task containers on this node (all: stopped ones too). */
export async function taskContainers(engine: EngineClient, name: string, signal?: AbortSignal, all = false): Promise<number> {
  return (await engine.listContainers({ all, labels: { 'com.docker.swarm.service.name': name }, signal })).length;
}

export type ServiceObservation = ResourceObservation & { tasks: { desired: number; running: number } };

/**
 * What the service runs, in Coolify's words: `running:healthy` when every wanted task runs (a
 * declared health check passed), `degraded:unhealthy` when some do, `exited` when it is scaled to
 * zero or gone; the tasks by container name (`<service>.<slot>.<task>`) with the counts.
 */
export async function observeService(engine: EngineClient, name: string, hasHealthcheck: boolean, wanted: 'running' | 'exited', signal?: AbortSignal): Promise<ServiceObservation> {
  const s = await engine.inspectService(name, { signal });
  const desired = s?.Spec.Mode.Replicated?.Replicas ?? 0;
  const tasks = s ? await engine.listTasks(name, { signal }) : [];
  const current = tasks.filter((t) => t.DesiredState === 'running');
  const running = runningOf(current);
  const containers: Record<string, ContainerObservation> = {};
  for (const t of current) {
    const state = t.Status.State === 'running' ? 'running' : t.Status.State === 'starting' ? 'running' : 'restarting';
    containers[`${name}.${t.Slot ?? 0}.${t.ID}`] = {
      state,
      health: hasHealthcheck ? (t.Status.State === 'running' ? 'healthy' : 'starting') : null,
      restarts: 0,
      exit_code: null,
      started_at: t.Status.State === 'running' ? (t.Status.Timestamp ?? null) : null,
    };
  }
  // Tasks that ended (their restart policy replaces them): a crash loop shows here.
  const failed = tasks.filter((t) => t.DesiredState === 'shutdown' && (t.Status.State === 'failed' || t.Status.State === 'rejected'));
  const lastExit = failed.map((t) => t.Status.ContainerStatus?.ExitCode).find((c) => c !== undefined) ?? null;
  let status: string;
  if (desired === 0 || (wanted === 'exited' && running.length === 0)) status = 'exited';
  else if (running.length >= desired) status = `running:${hasHealthcheck ? 'healthy' : 'unknown'}`;
  else if (running.length > 0) status = 'degraded:unhealthy';
  else if (current.some((t) => t.Status.State === 'starting')) status = 'running:starting';
  else status = 'restarting:unknown';
  return { status, restart_count: failed.length, last_exit_code: lastExit, containers, tasks: { desired, running: running.length } };
}

/**
 * The running task container of a service on this node that a command runs in: the lowest slot
 * first, so the same task answers each time while it runs; a 409 saying why when none runs.
 */
export async function runningTask(engine: EngineClient, name: string, signal?: AbortSignal): Promise<string> {
  const running = await engine.listContainers({ all: false, labels: { 'com.docker.swarm.service.name': name }, status: ['running'], signal });
  const [first] = running.map((c) => ({ id: c.Id, slot: slotOf(c.Labels?.['com.docker.swarm.task.name'], name) })).sort((a, b) => a.slot - b.slot || a.id.localeCompare(b.id));
  if (!first) {
    throw new BerthError('conflict', {
      message: `No task of the swarm service ${name} runs on this node (scaled to 0, stopped, or its tasks run on other nodes): deploy or start it, then run the command again.`,
    });
  }
  return first.id;
}

/** A task's slot from its name (`<service>.<slot>.<task id>`); tasks without one sort last. */
function slotOf(taskName: string | undefined, service: string): number {
  const slot = taskName?.startsWith(`${service}.`) ? Number(taskName.slice(service.length + 1).split('.')[0]) : Number.NaN;
  return Number.isInteger(slot) ? slot : Number.MAX_SAFE_INTEGER;
}
