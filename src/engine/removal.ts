import { type Orphans, reachesEngine, recordOnlyRuntime, type RemoveOptions } from '../core/runtime.js';
import { backupVolumeName } from './backup-plan.js';
import type { EngineClient } from './engine-client.js';
import { ConflictError, EngineError, NotFoundError } from './engine-errors.js';
import { kindFor } from './kinds.js';
import { LABEL_MIGRATION } from './migration-moves.js';
import { LABEL_MANAGED, LABEL_RESOURCE, planResource } from './plan.js';
import { dockerCleanup as pruneEngine } from './prune.js';
import { backoffDelay, DEFAULT_RETRY, sleepWithSignal } from './retry.js';
import { recordedNames, serverByIdOrThrow, serverOfResource, type RuntimeParts } from './runtime-rows.js';
import { BUILTIN_NETWORKS, containerName, LABEL_BACKUP_OF } from './standalone/names.js';

const NETWORK_SETTLE_MS = 10_000;
const NETWORK_POLL_MS = 250;

/** What goes from an engine when a resource is deleted, what berth left behind, and engine clean-ups. */

/** Frees space on a server's engine; what the records name stays. */
export async function dockerCleanup(parts: RuntimeParts, serverId: number, opts: { allImages: boolean; volumes: boolean; networks: boolean; signal?: AbortSignal }): Promise<string[]> {
  const server = await serverByIdOrThrow(parts.db, serverId);
  if (!reachesEngine(server)) return recordOnlyRuntime.dockerCleanup(serverId, opts);
  const engine = await parts.engineFor(server);
  // What the records name, whichever team: a stopped resource's data stays, and so do volumes
  // named after a resource (a migration's staging copies on their target, before the switch).
  const { volumes: named, resources: owners } = await recordedNames(parts.db);
  const networks = await parts.db.selectFrom('destinations').select('network').where('server_id', '=', serverId).execute();
  return pruneEngine(engine, {
    ...opts,
    keepVolume: (name) => named.has(name) || owners.has(name.split('-')[0]!),
    keepNetworks: new Set(networks.map((n) => n.network)),
  });
}

/** Removes a resource's workloads from its engine (by its kind), and its volumes and networks on request. */
export async function removeResource(parts: RuntimeParts, resourceId: number, opts: RemoveOptions): Promise<string[]> {
  const server = await serverOfResource(parts.db, resourceId);
  if (!reachesEngine(server)) return [];
  const plan = await planResource(parts.db, resourceId);
  const engine = await parts.engineFor(server);
  const uuid = plan.resourceUuid;
  const signal = AbortSignal.timeout(120_000);
  const out = await kindFor(plan.engineKind).remove(engine, plan, { log: async () => undefined, signal, warn: (fields, message) => parts.logger.warn(fields, message) });
  if (opts.volumes) {
    for (const v of [...plan.volumes, backupVolumeName(uuid)]) {
      if (await engine.removeVolume(v, { force: true, signal })) out.push(`removed volume ${v}`);
    }
  }
  if (opts.networks && !BUILTIN_NETWORKS.has(plan.network)) {
    // Only a network berth made that no container and no other record on this server still uses
    // (a swarm overlay's load-balancer endpoint, `lb-<network>`, is the engine's own and goes with it).
    const others = await parts.db
      .selectFrom('resources as r')
      .innerJoin('destinations as d', 'd.id', 'r.destination_id')
      .select('r.id')
      .where('d.server_id', '=', plan.serverId)
      .where('d.network', '=', plan.network)
      .where('r.id', '!=', resourceId)
      .executeTakeFirst();
    if (!others) {
      const line = await removeSharedNetwork(engine, plan.network, signal);
      if (line) out.push(line);
    }
  }
  // A service's own network goes with it (and one left from before connect_to_docker_network changed).
  if (opts.networks) out.push(...(await removeOwnNetworks(engine, uuid, signal)));
  if (opts.cleanup) {
    const pruned = await engine.pruneImages({ danglingOnly: true, signal });
    if (pruned.deleted) out.push(`removed ${pruned.deleted} unused image(s)`);
  }
  // Marked deleting, so its domains are no longer routed.
  await parts.routeProxy(plan.serverId, async (line) => void out.push(line));
  return out;
}

/** Removes what a resource left on a server it no longer lives on (after a migration, a deletion). */
export async function removeLeftovers(parts: RuntimeParts, serverId: number, resourceUuid: string, volumes: string[]): Promise<string[]> {
  const engine = await parts.liveEngineOf(serverId);
  if (!engine) return [];
  const signal = AbortSignal.timeout(120_000);
  const out: string[] = [];
  // Right after a stop the engine may still be cleaning the container up (409 on removal, and
  // its volume still in use): a few short retries, then the job sweep's later ones.
  const settled = async <T>(step: () => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await step();
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 6) throw err;
        await sleepWithSignal(backoffDelay(attempt, DEFAULT_RETRY), signal);
      }
    }
  };
  for (const c of await engine.listContainers({ all: true, labels: { [LABEL_RESOURCE]: resourceUuid }, signal })) {
    if (await settled(() => engine.removeContainer(containerName(c), { force: true, removeVolumes: false, signal }))) out.push(`removed container ${containerName(c)}`);
  }
  for (const v of volumes) if (await settled(() => engine.removeVolume(v, { force: true, signal }))) out.push(`removed volume ${v}`);
  out.push(...(await removeOwnNetworks(engine, resourceUuid, signal)));
  return out;
}

/**
 * Removes a destination's network berth made once only an engine's own endpoint (a swarm overlay's
 * load balancer, `lb-<network>`) is on it. A swarm detaches a removed service's endpoints a moment
 * after its containers go, and refuses the delete meanwhile (403, or 409 on Podman) though it
 * may finish it on its own: a few seconds' patience, then a line saying what kept it.
 */
async function removeSharedNetwork(engine: EngineClient, network: string, signal: AbortSignal): Promise<string | undefined> {
  const until = Date.now() + NETWORK_SETTLE_MS;
  let asked = false;
  for (;;) {
    let attached: string[];
    try {
      const n = await engine.inspectNetwork(network, { signal });
      if (n.Labels?.[LABEL_MANAGED] !== 'true') return undefined;
      attached = Object.entries((n.Containers ?? {}) as Record<string, { Name?: string }>)
        .filter(([k]) => !k.startsWith('lb-'))
        .map(([k, c]) => c.Name ?? k);
      asked = attached.length === 0;
      if (asked && (await engine.removeNetwork(network, { signal }))) return `removed network ${network}`;
      if (attached.length === 0) return undefined;
    } catch (err) {
      // A swarm may refuse the delete while its node lets go of the network, and remove it anyway.
      if (err instanceof NotFoundError) return asked ? `removed network ${network}` : undefined;
      // Docker answers 403 ("has active endpoints"), Podman 409.
      if (!(err instanceof ConflictError || (err instanceof EngineError && err.status === 403))) throw err;
      attached = ['an endpoint the engine is still detaching'];
    }
    if (Date.now() >= until) return `kept network ${network}: still used by ${attached.join(', ')}`;
    await sleepWithSignal(NETWORK_POLL_MS, signal);
  }
}

/** The networks berth made for one resource alone (a service's own), once no container is on them. */
async function removeOwnNetworks(engine: EngineClient, resourceUuid: string, signal: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  for (const n of await engine.listNetworks({ signal })) {
    if (n.Labels?.[LABEL_RESOURCE] !== resourceUuid || n.Labels?.[LABEL_MANAGED] !== 'true') continue;
    // A list may leave out who is attached; the inspect says (a swarm overlay's load balancer goes with it).
    if (Object.keys((await engine.inspectNetwork(n.Name, { signal })).Containers ?? {}).filter((k) => !k.startsWith('lb-')).length > 0) continue;
    if (await engine.removeNetwork(n.Name, { signal })) out.push(`removed network ${n.Name}`);
  }
  return out;
}

/** berth's containers and volumes on a server's engine that no record names. */
export async function orphans(parts: RuntimeParts, serverId: number): Promise<Orphans> {
  const server = await serverByIdOrThrow(parts.db, serverId);
  if (!reachesEngine(server)) return { containers: [], volumes: [] };
  const engine = await parts.engineFor(server);
  // Any team's records count: a volume or container a record names is never an orphan.
  const { resources: known, volumes: named } = await recordedNames(parts.db);
  const containers = (await engine.listContainers({ all: true, labels: { [LABEL_MANAGED]: 'true' } }))
    .map((c) => ({ name: containerName(c), resource_uuid: c.Labels?.[LABEL_RESOURCE] ?? c.Labels?.[LABEL_BACKUP_OF] ?? null, state: c.State, migration: c.Labels?.[LABEL_MIGRATION] }))
    .filter((c) => !c.migration && (c.resource_uuid === null || !known.has(c.resource_uuid)))
    .map(({ migration: _m, ...c }) => c);
  // berth's volumes: labelled when berth made them, or named after a resource (backup volumes
  // are made by the engine when a helper first mounts them).
  const owner = (name: string) => /^(?:berth-backups-)?([a-z0-9]{24})(?:-|$)/.exec(name)?.[1] ?? null;
  const volumes = (await engine.listVolumes())
    .filter((v) => (v.Labels?.[LABEL_MANAGED] === 'true' || owner(v.Name) !== null) && !v.Labels?.[LABEL_MIGRATION] && !named.has(v.Name))
    .map((v) => ({ name: v.Name, resource_uuid: owner(v.Name) }))
    .filter((v) => v.resource_uuid === null || !known.has(v.resource_uuid));
  return { containers, volumes };
}
