/**
 * The swarm engine kind: an application on a swarm destination is one Docker Swarm service
 * named after it, on the destination's attachable overlay network, asked of a manager's engine.
 * Swarm does the rolling: a deploy sends the spec (start-first, rollback on failure) and waits
 * until the wanted number of tasks run the new spec. See docs/decisions/swarm.md.
 */
import type { ContainerObservation, ResourceObservation } from '../../core/observed-status.js';
import { BerthError } from '../../errors.js';
import type { EngineClient } from '../engine-client.js';
import { NotFoundError } from '../engine-errors.js';
import type { EngineKind, KindContext } from '../kind.js';
import { LABEL_MANAGED, planRefusal, type Plan } from '../plan.js';
import type { ServiceInspect, SwarmTask } from '../docker/swarm.js';
import { serviceSpec, swarmPlanRefusal, unappliedSettings } from './spec.js';

const CONVERGE_TIMEOUT_MS = 180_000;
const POLL_MS = 250;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const abort = () => (clearTimeout(t), reject(signal!.reason));
    const t = setTimeout(() => (signal?.removeEventListener('abort', abort), resolve()), ms);
    signal?.addEventListener('abort', abort, { once: true });
  });

const serviceName = (plan: Plan) => plan.containers[0]!.name;

/** Tasks the orchestrator wants running and that run (a health check, when declared, has passed: swarm holds them in `starting` until then). */
const runningOf = (tasks: SwarmTask[]) => tasks.filter((t) => t.DesiredState === 'running' && t.Status.State === 'running');

/** The overlay network of the destination: made attachable (the proxy joins it) when missing. */
async function ensureOverlay(engine: EngineClient, network: string, ctx: KindContext): Promise<void> {
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
  await engine.createNetwork(network, { driver: 'overlay', attachable: true, labels: { [LABEL_MANAGED]: 'true' }, signal: ctx.signal });
  await ctx.log(`created overlay network ${network}`);
}

/**
 * Waits until the service runs `replicas` tasks of its current spec and no update is under way;
 * a rolled-back or paused update fails with the engine's message.
 */
async function converge(engine: EngineClient, name: string, replicas: number, ctx: KindContext, before: ServiceInspect | null = null): Promise<void> {
  const until = Date.now() + CONVERGE_TIMEOUT_MS;
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
    const line = `tasks running ${running.length}/${replicas}${state ? ` (update ${state})` : ''}`;
    if (line !== said) await ctx.log((said = line));
    const updating = state === 'pending' || state === 'updating' || state === 'rollback_started';
    if (!updating && running.length === replicas && tasks.length === replicas) return;
    if (Date.now() > until) {
      const failed = tasks.find((t) => t.Status.Err)?.Status.Err;
      throw new Error(`The service ${name} did not reach ${replicas} running task(s) in ${CONVERGE_TIMEOUT_MS / 1000} s (${running.length} run)${failed ? `: ${failed}` : ''}.`);
    }
    await sleep(POLL_MS, ctx.signal);
  }
}

/** Whether an update changed what the tasks run (both specs as the engine reads them back). */
const templateChanged = (before: ServiceInspect, now: ServiceInspect) => JSON.stringify(before.Spec.TaskTemplate) !== JSON.stringify(now.Spec.TaskTemplate);

/** Whether the service shows an update (or rollback) begun after the one `before` knew of. */
const updateStartedSince = (before: ServiceInspect, now: ServiceInspect) => Boolean(now.UpdateStatus?.StartedAt) && now.UpdateStatus?.StartedAt !== before.UpdateStatus?.StartedAt;

/** Sends the spec: creates the service, or updates it at the version read (start-first rolling). */
async function apply(engine: EngineClient, plan: Plan, ctx: KindContext, opts: { replicas?: number; force?: boolean } = {}): Promise<ServiceInspect | null> {
  const name = serviceName(plan);
  const current = await engine.inspectService(name, { signal: ctx.signal });
  const spec = serviceSpec(plan, {
    ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
    // Kept as it was unless a restart asks for a new one: an unchanged spec then changes nothing.
    forceUpdate: (current?.Spec.TaskTemplate.ForceUpdate ?? 0) + (opts.force ? 1 : 0),
  });
  if (!current) {
    await engine.createService(spec, { signal: ctx.signal });
    await ctx.log(`created swarm service ${name} (${spec.Mode.Replicated.Replicas} replica(s), ${String(spec.TaskTemplate.ContainerSpec.Image)})`);
  } else {
    await engine.updateService(name, current.Version.Index, spec, { signal: ctx.signal });
    await ctx.log(`updated swarm service ${name} (${spec.Mode.Replicated.Replicas} replica(s), ${String(spec.TaskTemplate.ContainerSpec.Image)}, start-first)`);
  }
  return current;
}

export const swarmKind: EngineKind = {
  type: 'swarm',

  async deploy(engine, plan, ctx) {
    // The one host-isolation check first, as a standalone deploy makes it: whatever door the settings came through.
    const refusal = planRefusal(plan) ?? swarmPlanRefusal(plan);
    if (refusal) throw new Error(refusal);
    for (const note of plan.notes) await ctx.log(note);
    const c = plan.containers[0]!;
    const left = unappliedSettings(c.spec);
    if (left.length) await ctx.log(`not applied on a swarm service: ${left.join(', ')}`);
    await ensureOverlay(engine, plan.network, ctx);
    // Made on the manager with berth's labels so a delete finds them; other nodes make theirs at the first task.
    for (const v of plan.volumes) {
      try {
        await engine.inspectVolume(v, { signal: ctx.signal });
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        await engine.createVolume(v, { labels: { [LABEL_MANAGED]: 'true', 'berth.resource': serviceName(plan) }, signal: ctx.signal });
      }
    }
    const before = await apply(engine, plan, ctx);
    await converge(engine, serviceName(plan), plan.swarm!.replicas, ctx, before);
    await ctx.log(`${plan.swarm!.replicas} task(s) of ${serviceName(plan)} run ${c.spec.image}`);
  },

  async start(engine, plan, ctx) {
    await this.deploy(engine, plan, ctx);
  },

  async restart(engine, plan, ctx) {
    if (!(await engine.inspectService(serviceName(plan), { signal: ctx.signal }))) return false;
    // A forced update replaces every task, one at a time, start-first: a rolling restart.
    const before = await apply(engine, plan, ctx, { force: true });
    await converge(engine, serviceName(plan), plan.swarm!.replicas, ctx, before);
    return true;
  },

  async stop(engine, plan, ctx) {
    const name = serviceName(plan);
    const current = await engine.inspectService(name, { signal: ctx.signal });
    if (!current) return;
    // Scaled to zero: the service and its settings stay, so a start is a scale back.
    const spec = { ...current.Spec, Mode: { Replicated: { Replicas: 0 } } };
    await engine.updateService(name, current.Version.Index, spec, { signal: ctx.signal });
    await ctx.log(`scaled swarm service ${name} to 0`);
    const until = Date.now() + CONVERGE_TIMEOUT_MS;
    while (runningOf(await engine.listTasks(name, { signal: ctx.signal })).length > 0 || (await taskContainers(engine, name, ctx.signal)) > 0) {
      if (Date.now() > until) throw new Error(`The tasks of ${name} did not stop in ${CONVERGE_TIMEOUT_MS / 1000} s.`);
      await sleep(POLL_MS, ctx.signal);
    }
    await ctx.log('no task runs');
  },

  async observe(engine, plan, wanted, signal) {
    return observeService(engine, serviceName(plan), plan.containers[0]?.spec.healthcheck !== undefined, wanted, signal);
  },

  async remove(engine, plan, ctx) {
    const name = serviceName(plan);
    if (!(await engine.removeService(name, { signal: ctx.signal }))) return [];
    // Its containers go after the service: volumes and the network are free only then.
    const until = Date.now() + CONVERGE_TIMEOUT_MS;
    while ((await taskContainers(engine, name, ctx.signal, true)) > 0 && Date.now() < until) await sleep(POLL_MS, ctx.signal);
    // Their endpoints leave the overlay network a moment after the containers (the load balancer's stays).
    while ((await networkEndpoints(engine, plan.network, ctx.signal)) > 0 && Date.now() < until) await sleep(POLL_MS, ctx.signal);
    return [`removed swarm service ${name}`];
  },

  async execTarget(engine, plan, _c, signal) {
    const name = serviceName(plan);
    const running = await engine.listContainers({ all: false, labels: { 'com.docker.swarm.service.name': name }, status: ['running'], signal });
    // The lowest slot first, so the same task answers each time while it runs.
    const [first] = running.map((c) => ({ id: c.Id, slot: slotOf(c.Labels?.['com.docker.swarm.task.name'], name) })).sort((a, b) => a.slot - b.slot || a.id.localeCompare(b.id));
    if (!first) {
      throw new BerthError('conflict', {
        message: `No task of the swarm service ${name} runs on this node (scaled to 0, stopped, or its tasks run on other nodes): deploy or start the application, then run the command again.`,
      });
    }
    return first.id;
  },

  async logs(engine, plan, opts) {
    const entries = await engine.serviceLogs(serviceName(plan), { tail: opts.lines, timestamps: Boolean(opts.timestamps), ...(opts.signal ? { signal: opts.signal } : {}) });
    // The task that wrote each line, as `docker service logs` names it.
    return entries.map((e) => `${opts.timestamps && e.timestamp ? `${e.timestamp} ` : ''}[${e.taskId?.slice(0, 12) ?? '?'}] ${e.line}`).join('\n');
  },
};

/** A task's slot from its name (`<service>.<slot>.<task id>`); tasks without one sort last. */
function slotOf(taskName: string | undefined, service: string): number {
  const slot = taskName?.startsWith(`${service}.`) ? Number(taskName.slice(service.length + 1).split('.')[0]) : Number.NaN;
  return Number.isInteger(slot) ? slot : Number.MAX_SAFE_INTEGER;
}

/** Endpoints on a network other than a swarm load balancer's (`lb-<network>`, the engine's own); 0 when it is gone. */
async function networkEndpoints(engine: EngineClient, network: string, signal?: AbortSignal): Promise<number> {
  try {
    return Object.keys((await engine.inspectNetwork(network, { signal })).Containers ?? {}).filter((k) => !k.startsWith('lb-')).length;
  } catch (err) {
    if (err instanceof NotFoundError) return 0;
    throw err;
  }
}

/** The service's task containers on this node (all: stopped ones too). */
async function taskContainers(engine: EngineClient, name: string, signal?: AbortSignal, all = false): Promise<number> {
  return (await engine.listContainers({ all, labels: { 'com.docker.swarm.service.name': name }, signal })).length;
}

/**
 * What the service runs, in Coolify's words: `running:healthy` when every wanted task runs (a
 * declared health check passed), `degraded:unhealthy` when some do, `exited` when it is scaled to
 * zero or gone; the tasks by container name (`<service>.<slot>.<task>`) with the counts.
 */
export async function observeService(
  engine: EngineClient,
  name: string,
  hasHealthcheck: boolean,
  wanted: 'running' | 'exited',
  signal?: AbortSignal,
): Promise<ResourceObservation & { tasks: { desired: number; running: number } }> {
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
