import { aggregate, type ContainerObservation, MISSING, observeContainer } from '../../core/observed-status.js';
import { NotFoundError } from '../engine-errors.js';
import type { EngineKind } from '../kind.js';
import { LABEL_RESOURCE } from '../plan.js';
import { deploy, missing } from './deploy.js';
import { containerName, LABEL_BACKUP_OF } from './names.js';
import { startInOrder } from './readiness.js';
import { ensureStopped, stopAll } from './stop.js';

/**
 * Standalone Docker-compatible engines (Docker, podman): a resource is its plan's containers on
 * one engine, replaced at each deploy (by Coolify's rolling update where it applies).
 */
export const standaloneKind: EngineKind = {
  type: 'standalone',

  deploy,

  async start(engine, plan, ctx) {
    const absent = await missing(engine, plan);
    if (absent.length === 0) {
      await startInOrder(engine, plan, ctx);
      await ctx.log(`started ${plan.containers.length} container(s)`);
      return;
    }
    await ctx.log(`${absent.length} container(s) do not exist yet; deploying instead`);
    await deploy(engine, plan, ctx);
  },

  async restart(engine, plan, ctx) {
    await stopAll(engine, plan, ctx);
    // One that kept restarting is removed by ensureStopped, and deployed again by the caller.
    await ensureStopped(engine, plan, ctx);
    if ((await missing(engine, plan)).length === 0) {
      await startInOrder(engine, plan, ctx);
      await ctx.log('restarted');
      return true;
    }
    await ctx.log('some containers do not exist; deploying instead');
    return false;
  },

  async stop(engine, plan, ctx, opts = {}) {
    await stopAll(engine, plan, ctx, opts);
    await ensureStopped(engine, plan, ctx);
  },

  async observe(engine, plan, wanted, signal) {
    const containers: Record<string, ContainerObservation> = {};
    for (const c of plan.containers) {
      try {
        containers[c.name] = observeContainer(await engine.inspectContainer(c.name, { signal }), wanted);
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        containers[c.name] = { ...MISSING };
      }
    }
    return aggregate(containers);
  },

  async remove(engine, plan, ctx) {
    const out: string[] = [];
    // Its containers, a rolling update's leftover, and the backup helpers made for it.
    const names = new Set([...plan.containers.map((c) => c.name), ...plan.containers.map((c) => `${c.name}-next`)]);
    for (const c of await engine.listContainers({ all: true, labels: { [LABEL_BACKUP_OF]: plan.resourceUuid }, signal: ctx.signal })) names.add(containerName(c));
    for (const c of await engine.listContainers({ all: true, labels: { [LABEL_RESOURCE]: plan.resourceUuid }, signal: ctx.signal })) names.add(containerName(c));
    for (const name of names) if (await engine.removeContainer(name, { force: true, removeVolumes: false, signal: ctx.signal })) out.push(`removed container ${name}`);
    return out;
  },

  // The planned container itself, by name: exec checks that it runs.
  async execTarget(_engine, _plan, c) {
    return c.name;
  },

  async logs(engine, plan, opts) {
    const parts: string[] = [];
    const chosen = plan.containers.filter((k) => opts.container === undefined || k.spec.labels?.['berth.container'] === opts.container);
    for (const c of chosen) {
      try {
        const { entries } = await engine.containerLogs(c.name, { tail: opts.lines, timestamps: Boolean(opts.timestamps), ...(opts.signal ? { signal: opts.signal } : {}) });
        const lines = entries.map((e) => (opts.timestamps ? `${e.timestamp ?? ''} ${e.line}`.trim() : e.line));
        // Several containers' lines are told apart by a prefix; one container's need none.
        parts.push(chosen.length > 1 ? lines.map((l) => `[${c.name}] ${l}`).join('\n') : lines.join('\n'));
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
    return parts.filter(Boolean).join('\n');
  },
};
