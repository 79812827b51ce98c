import type { EngineClient } from '../engine-client.js';
import { loadEngineModules } from '../engine-modules.js';
import { NotFoundError } from '../engine-errors.js';
import type { KindContext } from '../kind.js';
import { LABEL_MANAGED, LABEL_RESOURCE, planRefusal, type Plan } from '../plan.js';
import { BUILTIN_NETWORKS } from './names.js';
import { awaitReady, startInOrder } from './readiness.js';

/** The plan's containers the engine does not have. */
export async function missing(engine: EngineClient, plan: Plan): Promise<string[]> {
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

/** Replaces every container of the plan with a fresh one from the records; volumes persist. */
export async function deploy(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void> {
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
  if (await rollingUpdate(engine, plan, ctx)) return;
  for (const c of plan.containers) {
    // removeContainer answers false (no error) when there was none to remove.
    if (await engine.removeContainer(c.name, { force: true, signal: ctx.signal })) await ctx.log(`removed the previous ${c.name}`);
    await engine.createContainer(c.name, c.spec, { signal: ctx.signal });
    await writeFiles(engine, c.name, c, ctx);
  }
  await startInOrder(engine, plan, ctx);
  for (const c of plan.containers) await ctx.log(`started ${c.name} from ${c.spec.image}`);
}

/** A container's file storages, written into it once created (archives work on a stopped container). */
async function writeFiles(engine: EngineClient, container: string, c: Plan['containers'][number], ctx: KindContext): Promise<void> {
  if (!c.files?.length) return;
  // Loaded here, as the engine modules are: node-tar stays out of a start that never deploys.
  const { fileStoragesTar } = await import('../file-tar.js');
  await engine.putArchive(container, '/', fileStoragesTar(c.files), { signal: ctx.signal });
  await ctx.log(`wrote ${c.files.length} file storage(s) into ${container}: ${c.files.map((f) => f.path).join(', ')}`);
}

/**
 * Coolify's rolling update, for a one-container resource with a health check and no fixed host
 * port (two containers cannot bind one): the new container starts beside the running one, and
 * replaces it only once healthy; a new one that fails is removed and the previous one keeps
 * serving. False when it does not apply (the caller replaces the container in place).
 */
async function rollingUpdate(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<boolean> {
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
  await writeFiles(engine, next, c, ctx);
  await ctx.log(`rolling update: starting ${next} beside the running ${c.name}`);
  try {
    await engine.startContainer(next, { signal: ctx.signal });
    await awaitReady(engine, next, ctx, { requireHealthy: true });
  } catch (err) {
    await engine.removeContainer(next, { force: true }).catch(() => undefined);
    throw new Error(`${(err as Error).message}\nThe new container was removed; the previous one keeps running.`);
  }
  await engine.removeContainer(c.name, { force: true, signal: ctx.signal });
  await engine.renameContainer(next, c.name, { signal: ctx.signal });
  await ctx.log(`rolling update: ${c.name} replaced by the new container from ${c.spec.image}`);
  return true;
}
