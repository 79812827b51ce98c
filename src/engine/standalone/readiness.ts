import type { EngineClient } from '../engine-client.js';
import { berthRunsHealthchecks } from './healthchecks.js';
import { hasHealthcheck } from '../../core/observed-status.js';
import type { KindContext } from '../kind.js';
import type { Plan, PlannedContainer } from '../plan.js';

/** How long a started container must stay up (without a health check) to count as running. */
const SETTLE_MS = 1_000;
/** How long a deploy waits for its containers to run (healthy, with a health check). */
export const DEPLOY_READY_TIMEOUT_MS = 120_000;
const POLL_MS = 150;

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => (clearTimeout(t), reject(signal!.reason));
    const t = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** A planned container's dependencies (compose depends_on), in the plan's terms. */
const dependsOn = (c: PlannedContainer) => c.dependsOn ?? [];

/** The last health-check output, for a failure message. */
function healthOutput(h: { Status: string; [key: string]: unknown } | undefined): string {
  const log = Array.isArray(h?.Log) ? (h.Log as { ExitCode?: number; Output?: string }[]) : [];
  const last = log[log.length - 1];
  return last ? ` Last check: exit code ${last.ExitCode ?? '?'}${last.Output?.trim() ? `, output: ${last.Output.trim().slice(0, 500)}` : ''}.` : '';
}

/**
 * Starts containers in the plan's order (dependencies first), each once the ones it depends on
 * are as its condition asks (started, healthy, or exited with 0), then waits until every
 * long-running one runs (healthy, when it has a health check). Throws with the exit code and
 * the log tail of one that does not.
 */
export async function startInOrder(engine: EngineClient, plan: Plan, ctx: Pick<KindContext, 'log' | 'signal'>): Promise<void> {
  const oneShots = new Set(
    plan.containers.flatMap((c) =>
      dependsOn(c)
        .filter((d) => d.condition === 'service_completed_successfully')
        .map((d) => d.name),
    ),
  );
  for (const c of plan.containers) {
    for (const dep of dependsOn(c)) {
      if (dep.condition === 'service_healthy') await awaitReady(engine, dep.name, ctx, { requireHealthy: true });
      if (dep.condition === 'service_completed_successfully') {
        const w = await engine.waitContainer(dep.name, { signal: ctx.signal });
        if (w.StatusCode !== 0) throw new Error(`${dep.name} exited with ${w.StatusCode}; ${c.name} depends on its success.${await logTail(engine, dep.name)}`);
      }
    }
    await engine.startContainer(c.name, { signal: ctx.signal });
  }
  for (const c of plan.containers) if (!oneShots.has(c.name)) await awaitReady(engine, c.name, ctx);
}

/** The last lines a container wrote, for a failure message. */
async function logTail(engine: EngineClient, name: string): Promise<string> {
  try {
    const { entries } = await engine.containerLogs(name, { tail: 20, maxBytes: 16 * 1024 });
    const lines = entries.map((e) => e.line).filter(Boolean);
    return lines.length ? `\nLast log lines:\n${lines.join('\n')}` : '\nIt wrote no log.';
  } catch {
    return '';
  }
}

/**
 * Waits until a started container runs for good: healthy when it has a health check (berth runs
 * the check where the engine does not), otherwise up for a short while without a restart. A
 * container that exits, restarts or turns unhealthy fails at once, with its exit code and log
 * tail; one that never gets there fails at the timeout.
 */
export async function awaitReady(engine: EngineClient, name: string, ctx: Pick<KindContext, 'log' | 'signal'>, opts: { requireHealthy?: boolean } = {}): Promise<void> {
  const deadline = Date.now() + DEPLOY_READY_TIMEOUT_MS;
  const drivesChecks = await drivesHealthchecks(engine);
  let first: number | undefined;
  let upSince: number | undefined;
  let lastCheck = 0;
  let waitSaid = false;
  for (;;) {
    const info = await engine.inspectContainer(name, { signal: ctx.signal });
    const s = info.State;
    const restarts = info.RestartCount ?? 0;
    first ??= restarts;
    const hasCheck = hasHealthcheck(info);
    if (!s.Running || restarts > first) {
      // A one-shot container (no restart policy) that did its work is done, not failed.
      if (!s.Running && s.ExitCode === 0 && (info.HostConfig.RestartPolicy?.Name ?? 'no') === 'no' && !opts.requireHealthy) return;
      const code = s.Running ? await exitCodeBetweenRestarts(engine, name, ctx.signal) : s.ExitCode;
      throw new Error(`${name} did not stay running (exit code ${code ?? 'unknown'}${restarts > first ? `, restarted ${restarts - first} time(s)` : ''}).${await logTail(engine, name)}`);
    }
    if (hasCheck) {
      const health = s.Health?.Status;
      // Said once, so a caller following the deployment (a progress heartbeat) sees what it waits on.
      if (health !== 'healthy' && !waitSaid) {
        waitSaid = true;
        await ctx.log(`${name}: health check ${health || 'starting'}, waiting up to ${DEPLOY_READY_TIMEOUT_MS / 1000} s for healthy`);
      }
      if (health === 'healthy') {
        await ctx.log(`${name} is healthy`);
        return;
      }
      if (health === 'unhealthy') throw new Error(`${name} is unhealthy: its health check failed.${healthOutput(s.Health)}${await logTail(engine, name)}`);
      if (drivesChecks && Date.now() - lastCheck >= 1_000) {
        lastCheck = Date.now();
        await engine.runHealthcheck(name, { signal: ctx.signal });
        continue;
      }
    } else if (opts.requireHealthy) {
      throw new Error(`${name} has no health check, and another container waits for it to be healthy.`);
    } else {
      upSince ??= Date.now();
      if (Date.now() - upSince >= SETTLE_MS) return;
    }
    if (Date.now() > deadline) throw new Error(`${name} did not become ${hasCheck ? 'healthy' : 'ready'} within ${DEPLOY_READY_TIMEOUT_MS / 1000} s.${await logTail(engine, name)}`);
    await sleep(POLL_MS, ctx.signal);
  }
}

/**
 * A container its policy restarts at once reports running with exit code 0 in most inspects
 * (podman): its real exit code shows only between two runs, caught by looking often for a moment.
 */
async function exitCodeBetweenRestarts(engine: EngineClient, name: string, signal?: AbortSignal): Promise<number | null> {
  for (let i = 0; i < 50; i++) {
    const s = (await engine.inspectContainer(name, { signal })).State;
    if (!s.Running) return s.ExitCode;
    await sleep(10, signal);
  }
  return null;
}

const podmanEngines = new WeakMap<EngineClient, Promise<boolean>>();

/** Whether berth runs this engine's health checks (podman), asked once per client. */
function drivesHealthchecks(engine: EngineClient): Promise<boolean> {
  let p = podmanEngines.get(engine);
  if (!p) {
    p = engine.version().then(berthRunsHealthchecks);
    p.catch(() => podmanEngines.delete(engine));
    podmanEngines.set(engine, p);
  }
  return p;
}
