import { ConflictError } from './engine-errors.js';
import type { EngineClient } from './engine-client.js';

export interface CleanupOptions {
  /** Every image no container uses, not only dangling ones (Coolify's force_docker_cleanup). */
  allImages: boolean;
  volumes: boolean;
  networks: boolean;
  /** Volumes berth's records still name (or a migration is filling): never removed. */
  keepVolume: (name: string) => boolean;
  /** Networks of this server's destinations. */
  keepNetworks: ReadonlySet<string>;
  signal?: AbortSignal;
}

/** The engine's own networks. */
const BUILTIN_NETWORKS = new Set(['bridge', 'host', 'none', 'podman']);

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/**
 * Frees space on a server's engine, as Coolify's Docker cleanup: unused images and build cache,
 * and on request volumes and networks no container uses. What berth's records still name (a
 * stopped resource's data, a destination's network) and berth's own volumes (`berth-…`: backups,
 * migration staging) are kept whatever the engine thinks. Returns the log lines.
 */
export async function dockerCleanup(engine: EngineClient, o: CleanupOptions): Promise<string[]> {
  const log: string[] = [];
  const images = await engine.pruneImages({ danglingOnly: !o.allImages, signal: o.signal });
  log.push(`images: ${images.deleted} removed (${o.allImages ? 'every unused image' : 'dangling only'}), ${mib(images.reclaimed)} reclaimed`);
  const cache = await engine.pruneBuildCache({ signal: o.signal });
  log.push(cache ? `build cache: ${mib(cache.reclaimed)} reclaimed` : 'build cache: the engine has none to prune');
  if (o.volumes) {
    const removed: string[] = [];
    for (const v of await engine.listVolumes({ dangling: true, signal: o.signal })) {
      if (o.keepVolume(v.Name) || v.Name.startsWith('berth-')) continue;
      try {
        if (await engine.removeVolume(v.Name, { signal: o.signal })) removed.push(v.Name);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err; // taken into use since the listing
      }
    }
    log.push(`volumes: ${removed.length} unused removed${removed.length ? ` (${removed.join(', ')})` : ''}`);
  }
  if (o.networks) {
    const removed: string[] = [];
    for (const n of await engine.listNetworks({ signal: o.signal })) {
      if (BUILTIN_NETWORKS.has(n.Name) || o.keepNetworks.has(n.Name) || Object.keys(n.Containers ?? {}).length) continue;
      try {
        if (await engine.removeNetwork(n.Name, { signal: o.signal })) removed.push(n.Name);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    log.push(`networks: ${removed.length} unused removed${removed.length ? ` (${removed.join(', ')})` : ''}`);
  }
  return log;
}
