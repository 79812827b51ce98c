import type { LogEntry } from '../core/model/container-spec.js';
import type { DrainContainer } from '../core/runtime.js';
import type { EngineClient } from './engine-client.js';
import { LABEL_MIGRATION } from './migration-moves.js';
import { LABEL_MANAGED, LABEL_RESOURCE } from './plan.js';
import { HELPER_LABEL } from './volume-sync.js';

/**
 * What a log drain reads on a server's engine: the running containers of berth's resources, and
 * one container's lines as they are written. berth's own helpers (volume copies, backups, the
 * proxy) carry no resource label or carry a helper's: their output is never shipped.
 */
export async function resourceContainers(engine: EngineClient, signal?: AbortSignal): Promise<DrainContainer[]> {
  const running = await engine.listContainers({ all: false, labels: { [LABEL_MANAGED]: 'true' }, signal });
  return running.flatMap((c) => {
    const l = c.Labels ?? {};
    const resourceUuid = l[LABEL_RESOURCE];
    if (!resourceUuid || l[HELPER_LABEL] || l[LABEL_MIGRATION]) return [];
    return [{ id: c.Id, name: (c.Names[0] ?? c.Id).replace(/^\//, ''), resourceUuid }];
  });
}

/** Follows a container's lines written from `since` (Unix seconds) until it stops or `signal` aborts. */
export async function followLogs(engine: EngineClient, containerId: string, opts: { since: number; signal: AbortSignal; onEntry: (e: LogEntry) => void }): Promise<void> {
  await engine.containerLogs(containerId, { since: opts.since, timestamps: true, signal: opts.signal, follow: { onEntry: opts.onEntry } });
}
