import { DEFAULT_STOP_TIMEOUT_S } from '../../core/model/container-spec.js';
import type { EngineClient } from '../engine-client.js';
import { NotFoundError } from '../engine-errors.js';
import type { KindContext } from '../kind.js';
import type { Plan } from '../plan.js';

/**
 * Stops every container of the plan with its own grace period (a database's clean shutdown,
 * 10 s otherwise). `untilExited`: resolve as soon as each container's processes have exited,
 * leaving the engine to finish its stop (podman's clean-up after an exit takes 100–400 ms, which
 * a migration's pause need not include); a stop that then fails is logged.
 */
export async function stopAll(engine: EngineClient, plan: Plan, ctx: KindContext, opts: { untilExited?: boolean } = {}): Promise<void> {
  await Promise.all(
    plan.containers.map(async (c) => {
      const stopping = engine.stopContainer(c.name, c.spec.stopTimeoutS ?? DEFAULT_STOP_TIMEOUT_S, { signal: ctx.signal });
      try {
        if (opts.untilExited) {
          stopping.catch((err) => !(err instanceof NotFoundError) && ctx.warn?.({ err, container: c.name }, 'stop failed after the container exited'));
          await Promise.race([stopping, exited(engine, c.name, ctx.signal)]);
        } else {
          await stopping;
        }
        await ctx.log(`stopped ${c.name}`);
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }),
  );
}

/**
 * Resolves once the container's processes are gone (polled; the stop call does the stopping).
 * Not "Running: false": podman reports that for "stopping" too, while the process still runs;
 * a process id of 0 means it has exited.
 */
async function exited(engine: EngineClient, name: string, signal?: AbortSignal): Promise<void> {
  for (;;) {
    const c = await engine.inspectContainer(name, { signal });
    if (!c.State.Running && c.State.Restarting !== true && c.State.Status !== 'stopping' && !c.State.Pid) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A stop must end the container even while its restart policy restarts it. podman (4.x) keeps
 * restarting a container that exits at once, whatever stop answered (304, or even 204 between
 * two restarts), sometimes over a second later on a loaded machine, and cannot change a restart
 * policy in place. So a container still up after the stop, or one its policy has restarted
 * before, is removed at once rather than watched: its volumes are kept, and a start (or deploy)
 * recreates it from the records. One that never restarted and is down stays as it is.
 */
export async function ensureStopped(engine: EngineClient, plan: Plan, ctx: KindContext): Promise<void> {
  await Promise.all(
    plan.containers.map(async (c) => {
      try {
        const { State: state, RestartCount: restarts } = await engine.inspectContainer(c.name, { signal: ctx.signal });
        if (!state.Running && state.Restarting !== true && !restarts) return;
      } catch (err) {
        if (err instanceof NotFoundError) return;
        throw err;
      }
      ctx.warn?.({ container: c.name }, 'container restarted by its policy around the stop; removing it (volumes kept)');
      await engine.removeContainer(c.name, { force: true, removeVolumes: false, signal: ctx.signal });
      await ctx.log(`${c.name} was restarted by its policy: removed so that it stays stopped (its volumes are kept; start recreates it)`);
    }),
  );
}
