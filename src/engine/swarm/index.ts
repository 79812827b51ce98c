/**
 * The swarm engine kind: an application on a swarm destination is one Docker Swarm service
 * named after it, on the destination's attachable overlay network, asked of a manager's engine;
 * a compose file's plan (a service, a dockercompose application) is a stack (stack.ts).
 * Swarm does the rolling: a deploy sends the spec (start-first, rollback on failure) and waits
 * until the wanted number of tasks run the new spec. See docs/decisions/swarm.md.
 */
import type { EngineKind } from '../kind.js';
import { planRefusal, type Plan } from '../plan.js';
import { applySpec, CONVERGE_TIMEOUT_MS, converge, ensureOverlay, ensureVolumes, networkEndpoints, observeService, POLL_MS, runningTask, scaleToZero, sleep, taskContainers } from './services.js';
import { serviceSpec, swarmPlanRefusal, unappliedSettings } from './spec.js';
import { stackKind } from './stack.js';

const serviceName = (plan: Plan) => plan.containers[0]!.name;

const applicationKind: Omit<EngineKind, 'type'> = {
  async deploy(engine, plan, ctx) {
    // The one host-isolation check first, as a standalone deploy makes it: whatever door the settings came through.
    const refusal = planRefusal(plan) ?? swarmPlanRefusal(plan);
    if (refusal) throw new Error(refusal);
    for (const note of plan.notes) await ctx.log(note);
    const c = plan.containers[0]!;
    const left = unappliedSettings(c.spec);
    if (left.length) await ctx.log(`not applied on a swarm service: ${left.join(', ')}`);
    await ensureOverlay(engine, plan.network, ctx);
    await ensureVolumes(engine, plan.volumes, serviceName(plan), ctx);
    const before = await applySpec(engine, serviceName(plan), (forceUpdate) => serviceSpec(plan, { forceUpdate }), ctx);
    await converge(engine, serviceName(plan), plan.swarm!.replicas, ctx, before);
    await ctx.log(`${plan.swarm!.replicas} task(s) of ${serviceName(plan)} run ${c.spec.image}`);
  },

  async start(engine, plan, ctx) {
    await this.deploy(engine, plan, ctx);
  },

  async restart(engine, plan, ctx) {
    if (!(await engine.inspectService(serviceName(plan), { signal: ctx.signal }))) return false;
    // A forced update replaces every task, one at a time, start-first: a rolling restart.
    const before = await applySpec(engine, serviceName(plan), (forceUpdate) => serviceSpec(plan, { forceUpdate }), ctx, true);
    await converge(engine, serviceName(plan), plan.swarm!.replicas, ctx, before);
    return true;
  },

  async stop(engine, plan, ctx) {
    // Scaled to zero: the service and its settings stay, so a start is a scale back.
    if (await scaleToZero(engine, serviceName(plan), ctx)) await ctx.log('no task runs');
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

  execTarget: (engine, plan, _c, signal) => runningTask(engine, serviceName(plan), signal),

  async logs(engine, plan, opts) {
    const entries = await engine.serviceLogs(serviceName(plan), { tail: opts.lines, timestamps: Boolean(opts.timestamps), ...(opts.signal ? { signal: opts.signal } : {}) });
    // The task that wrote each line, as `docker service logs` names them.
    return entries.map((e) => `${opts.timestamps && e.timestamp ? `${e.timestamp} ` : ''}[${e.taskId?.slice(0, 12) ?? '?'}] ${e.line}`).join('\n');
  },
};

/** A compose file's plan is a stack; any other is one service. */
const part = (plan: Plan): Omit<EngineKind, 'type'> => (plan.compose ? stackKind : applicationKind);

export const swarmKind: EngineKind = {
  type: 'swarm',
  deploy: (engine, plan, ctx) => part(plan).deploy(engine, plan, ctx),
  start: (engine, plan, ctx) => part(plan).start(engine, plan, ctx),
  restart: (engine, plan, ctx) => part(plan).restart(engine, plan, ctx),
  stop: (engine, plan, ctx, opts) => part(plan).stop(engine, plan, ctx, opts),
  observe: (engine, plan, wanted, signal) => part(plan).observe(engine, plan, wanted, signal),
  remove: (engine, plan, ctx) => part(plan).remove(engine, plan, ctx),
  execTarget: (engine, plan, c, signal) => part(plan).execTarget(engine, plan, c, signal),
  logs: (engine, plan, opts) => part(plan).logs(engine, plan, opts),
};
