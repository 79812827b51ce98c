import type { EngineKind, EngineKindType } from './kind.js';
import { standaloneKind } from './standalone/kind.js';
import { swarmKind } from './swarm/index.js';

/** The engine kinds by a destination's type: a new kind is its folder plus one line here. */
const KINDS: Record<EngineKindType, EngineKind> = {
  standalone: standaloneKind,
  swarm: swarmKind,
};

/** The kind that runs a plan of this type. */
export function kindFor(type: EngineKindType): EngineKind {
  return KINDS[type];
}
