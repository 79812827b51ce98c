import { BerthError, validationError } from '../../errors.js';
import { SWARM_DATABASE_REFUSAL } from '../operations/resource-common.js';
import { placementOf } from '../swarm-fields.js';
import type { Bundle } from './bundle.js';

/**
 * What a bundle's shape cannot say but an import must hold to (docs/decisions/server-transfer.md):
 * no database on a swarm destination, as create refuses one; an application's swarm
 * fields in the ranges its update takes; a copy on a destination the bundle carries. A 422 naming
 * each path under `bundle.`, nothing written.
 */
export function checkBundle(b: Bundle): void {
  const errors: Record<string, string[]> = {};
  const add = (path: (string | number)[], message: string) => (errors[['bundle', ...path].join('.')] ??= []).push(message);
  const types = new Map(b.destinations.map((d) => [d.uuid, d.type ?? 'standalone']));
  b.resources.forEach((r, i) => {
    const config = r.config as { build_pack?: unknown; swarm_replicas?: unknown; swarm_placement_constraints?: unknown };
    // A compose file there runs as a stack; its deploy checks the file as create does.
    if (types.get(r.destination_uuid) === 'swarm' && r.kind !== 'application' && r.kind !== 'service') add(['resources', i, 'destination_uuid'], SWARM_DATABASE_REFUSAL);
    if (r.kind !== 'application') return;
    const replicas = config.swarm_replicas;
    if (replicas !== undefined && !(Number.isInteger(replicas) && (replicas as number) >= 0 && (replicas as number) <= 100)) {
      add(['resources', i, 'config', 'swarm_replicas'], 'A whole number from 0 to 100.');
    }
    const placement = config.swarm_placement_constraints;
    if (placement !== undefined && placement !== null) {
      if (typeof placement !== 'string') add(['resources', i, 'config', 'swarm_placement_constraints'], 'The placement YAML as text, or null.');
      else {
        try {
          placementOf(placement);
        } catch (err) {
          if (!(err instanceof BerthError)) throw err;
          for (const m of err.details.errors?.swarm_placement_constraints ?? [err.message]) add(['resources', i, 'config', 'swarm_placement_constraints'], m);
        }
      }
    }
  });
  (b.copies ?? []).forEach((c, i) => {
    if (!types.has(c.destination_uuid)) add(['copies', i, 'destination_uuid'], 'A copy runs on one of the destinations the bundle carries.');
  });
  if (Object.keys(errors).length) throw validationError(errors);
}
