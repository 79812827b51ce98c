/**
 * A compose file on a swarm destination, as `docker stack deploy` runs it, through the Engine
 * API: the stack is the resource's uuid, each compose service one swarm service
 * `<uuid>_<service>` labelled `com.docker.stack.namespace=<uuid>` beside berth's labels, on the
 * destination's overlay network (or the service's own) with its compose name as an alias, its
 * named volumes the ones a standalone deploy makes (same names: data and backups carry over).
 * What compose says that a service has no place for is refused by name (core/compose-swarm.ts).
 * See docs/decisions/swarm.md.
 */
import { swarmComposeProblems } from '../../core/compose-swarm.js';
import type { ContainerObservation } from '../../core/observed-status.js';
import type { EngineClient } from '../engine-client.js';
import type { EngineKind, KindContext } from '../kind.js';
import { LABEL_MANAGED, LABEL_RESOURCE, planRefusal, type Plan, type PlannedContainer } from '../plan.js';
import type { ServiceSpec } from '../docker/swarm.js';
import {
  applySpec,
  CONVERGE_TIMEOUT_MS,
  converge,
  ensureOverlay,
  ensureVolumes,
  networkEndpoints,
  observeService,
  POLL_MS,
  runningTask,
  scaleToZero,
  sleep,
  type ServiceObservation,
} from './services.js';
import { RESTART_POLICY, specOf } from './spec.js';

/** Docker's label of a stack's services, networks and containers. */
export const LABEL_STACK = 'com.docker.stack.namespace';
const LABEL_CONTAINER = 'berth.container';

/** A planned container's compose service name. */
const composeName = (c: PlannedContainer) => c.spec.labels?.[LABEL_CONTAINER] ?? c.name.slice(c.name.indexOf('-') + 1);
/** The swarm service of a compose service, as `docker stack deploy` names it. */
export const stackServiceName = (plan: Plan, c: PlannedContainer) => `${plan.resourceUuid}_${composeName(c)}`;
const replicasOf = (c: PlannedContainer) => c.replicas ?? 1;
const checks = (c: PlannedContainer) => Boolean(c.spec.healthcheck?.test.length && c.spec.healthcheck.test[0] !== 'NONE');

/** Compose's restart as a swarm restart policy (`docker stack deploy` reads deploy.restart_policy; berth maps restart). */
function restartOf(c: PlannedContainer): NonNullable<ServiceSpec['TaskTemplate']['RestartPolicy']> {
  const name = c.spec.restartPolicy?.name;
  if (name === 'no') return { ...RESTART_POLICY, Condition: 'none' };
  if (name === 'on-failure') return { ...RESTART_POLICY, Condition: 'on-failure' };
  return { ...RESTART_POLICY };
}

function stackSpec(plan: Plan, c: PlannedContainer, forceUpdate: number): ServiceSpec {
  const stack = { [LABEL_STACK]: plan.resourceUuid };
  return specOf({
    name: stackServiceName(plan, c),
    spec: c.spec,
    network: plan.network,
    // Found by its compose name, as compose does, and by its standalone container's name (the proxy's upstream).
    aliases: [composeName(c), c.name],
    replicas: replicasOf(c),
    labels: { ...stack, [LABEL_MANAGED]: 'true', [LABEL_RESOURCE]: plan.resourceUuid, [LABEL_CONTAINER]: composeName(c) },
    containerLabels: stack,
    restart: restartOf(c),
    ...(c.endpointMode ? { endpointMode: c.endpointMode } : {}),
    ...(forceUpdate ? { forceUpdate } : {}),
  });
}

/** Why the plan's compose file cannot run as a stack: every key, by name (null: it can). */
export function stackRefusal(plan: Plan): string | null {
  const problems = swarmComposeProblems(
    plan.containers.map((c) => ({
      name: composeName(c),
      // The plan joins every container to the plan's network; another mode is compose's network_mode.
      settings: { ...c.spec, networkMode: c.spec.networkMode === plan.network ? null : c.spec.networkMode, ...(c.endpointMode ? { endpointMode: c.endpointMode } : {}) },
    })),
  );
  return problems.length ? `The compose file cannot run as a swarm stack:\n${problems.map((p) => `  ${p}`).join('\n')}` : null;
}

/** Sends each service's spec in dependency order and waits for its tasks before the next (depends_on). */
async function applyAll(engine: EngineClient, plan: Plan, ctx: KindContext, force = false): Promise<void> {
  for (const c of plan.containers) {
    const name = stackServiceName(plan, c);
    const before = await applySpec(engine, name, (forceUpdate) => stackSpec(plan, c, forceUpdate), ctx, force);
    await converge(engine, name, replicasOf(c), ctx, before);
  }
}

/** The services of the stack on the engine (those a compose update dropped too). */
async function stackServices(engine: EngineClient, plan: Plan, signal?: AbortSignal): Promise<string[]> {
  return (await engine.listServices({ labels: [`${LABEL_STACK}=${plan.resourceUuid}`], signal })).map((s) => s.Spec.Name);
}

/** One compose service's observation as one container's (the service's parts read theirs by the planned name). */
function asContainer(o: ServiceObservation, healthcheck: boolean): ContainerObservation {
  const { desired, running } = o.tasks;
  const started = Object.values(o.containers).find((t) => t.started_at)?.started_at ?? null;
  const base = { restarts: o.restart_count, exit_code: o.last_exit_code, started_at: started };
  if (o.status === 'exited') return { ...base, state: 'exited', health: null };
  if (desired > 0 && running >= desired) return { ...base, state: 'running', health: healthcheck ? 'healthy' : null };
  if (running > 0) return { ...base, state: 'running', health: 'unhealthy' };
  if (o.status === 'running:starting') return { ...base, state: 'running', health: 'starting' };
  return { ...base, state: 'restarting', health: null };
}

export const stackKind: Omit<EngineKind, 'type'> = {
  async deploy(engine, plan, ctx) {
    const refusal = planRefusal(plan) ?? stackRefusal(plan);
    if (refusal) throw new Error(refusal);
    for (const note of plan.notes) await ctx.log(note);
    // A service's own network carries its uuid, so a delete finds it.
    await ensureOverlay(engine, plan.network, ctx, plan.ownNetwork ? { [LABEL_RESOURCE]: plan.resourceUuid } : {});
    await ensureVolumes(engine, plan.volumes, plan.resourceUuid, ctx);
    await applyAll(engine, plan, ctx);
    // A compose service the file no longer has goes, as `docker stack deploy --prune` does.
    const wanted = new Set(plan.containers.map((c) => stackServiceName(plan, c)));
    for (const name of await stackServices(engine, plan, ctx.signal)) {
      if (!wanted.has(name) && (await engine.removeService(name, { signal: ctx.signal }))) await ctx.log(`removed swarm service ${name} (no longer in the compose file)`);
    }
    await ctx.log(`stack ${plan.resourceUuid}: ${plan.containers.map((c) => `${composeName(c)} ${replicasOf(c)} task(s)`).join(', ')}`);
  },

  async start(engine, plan, ctx) {
    // Scaled back (or made when missing); a compose service dropped meanwhile goes at the next deploy only.
    const refusal = planRefusal(plan) ?? stackRefusal(plan);
    if (refusal) throw new Error(refusal);
    await ensureOverlay(engine, plan.network, ctx, plan.ownNetwork ? { [LABEL_RESOURCE]: plan.resourceUuid } : {});
    await ensureVolumes(engine, plan.volumes, plan.resourceUuid, ctx);
    await applyAll(engine, plan, ctx);
  },

  async restart(engine, plan, ctx) {
    for (const c of plan.containers) if (!(await engine.inspectService(stackServiceName(plan, c), { signal: ctx.signal }))) return false;
    // A forced update replaces every task, one at a time, start-first: a rolling restart.
    await applyAll(engine, plan, ctx, true);
    return true;
  },

  // One compose service's running task (its own swarm service).
  execTarget: (engine, plan, c, signal) => runningTask(engine, stackServiceName(plan, c), signal),

  async stop(engine, plan, ctx) {
    // Every service scaled to zero, the last in dependency order first.
    for (const c of [...plan.containers].reverse()) await scaleToZero(engine, stackServiceName(plan, c), ctx);
    await ctx.log('no task runs');
  },

  async observe(engine, plan, wanted, signal) {
    const containers: Record<string, ContainerObservation> = {};
    const seen: ServiceObservation[] = [];
    for (const c of plan.containers) {
      const o = await observeService(engine, stackServiceName(plan, c), checks(c), wanted, signal);
      seen.push(o);
      containers[c.name] = asContainer(o, checks(c));
    }
    const desired = seen.reduce((n, o) => n + o.tasks.desired, 0);
    const running = seen.reduce((n, o) => n + o.tasks.running, 0);
    const full = seen.filter((o) => o.tasks.desired > 0 && o.tasks.running >= o.tasks.desired);
    let status: string;
    if (desired === 0 || (wanted === 'exited' && running === 0)) status = 'exited';
    else if (full.length === seen.length) status = `running:${plan.containers.every(checks) ? 'healthy' : 'unknown'}`;
    else if (running > 0) status = 'degraded:unhealthy';
    else if (seen.some((o) => o.status === 'running:starting')) status = 'running:starting';
    else status = 'restarting:unknown';
    const exits = seen.map((o) => o.last_exit_code).filter((x) => x !== null);
    return {
      status,
      restart_count: seen.reduce((n, o) => n + o.restart_count, 0),
      last_exit_code: exits[0] ?? null,
      containers,
      tasks: { desired, running, services: seen.length, converged: full.length },
    };
  },

  async remove(engine, plan, ctx) {
    const names = new Set([...plan.containers.map((c) => stackServiceName(plan, c)), ...(await stackServices(engine, plan, ctx.signal))]);
    const out: string[] = [];
    for (const name of names) if (await engine.removeService(name, { signal: ctx.signal })) out.push(`removed swarm service ${name}`);
    // Their containers go after the services, and their endpoints leave the network a moment later: volumes and the network are free only then.
    const until = Date.now() + CONVERGE_TIMEOUT_MS;
    const left = async () => (await engine.listContainers({ all: true, labels: { [LABEL_STACK]: plan.resourceUuid }, signal: ctx.signal })).length;
    while ((await left()) > 0 && Date.now() < until) await sleep(POLL_MS, ctx.signal);
    const mine = (container: string) => container.startsWith(`${plan.resourceUuid}_`);
    while ((await networkEndpoints(engine, plan.network, ctx.signal, mine)) > 0 && Date.now() < until) await sleep(POLL_MS, ctx.signal);
    return out;
  },

  async logs(engine, plan, opts) {
    const chosen = plan.containers.filter((c) => opts.container === undefined || composeName(c) === opts.container);
    const parts: string[] = [];
    for (const c of chosen) {
      const name = stackServiceName(plan, c);
      if (!(await engine.inspectService(name, { signal: opts.signal }))) continue;
      const entries = await engine.serviceLogs(name, { tail: opts.lines, timestamps: Boolean(opts.timestamps), ...(opts.signal ? { signal: opts.signal } : {}) });
      // Each line with its task, and its compose service when several are shown.
      const tag = (task: string | null) => `[${chosen.length > 1 ? `${composeName(c)} ` : ''}${task?.slice(0, 12) ?? '?'}]`;
      parts.push(entries.map((e) => `${opts.timestamps && e.timestamp ? `${e.timestamp} ` : ''}${tag(e.taskId)} ${e.line}`).join('\n'));
    }
    return parts.filter(Boolean).join('\n');
  },
};
