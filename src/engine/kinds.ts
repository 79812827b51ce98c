import type { EngineKind, EngineKindType } from './kind.js';
import { standaloneKind } from './standalone/kind.js';

/** The engine kinds by a destination's type: a new kind is its folder plus one line here. */
const KINDS: Partial<Record<EngineKindType, EngineKind>> = {
  standalone: standaloneKind,
};

/** The kind that runs a plan of this type; a type berth has no kind for fails loudly. */
export function kindFor(type: EngineKindType): EngineKind {
  const kind = KINDS[type];
  if (!kind) throw new Error(`berth cannot run resources on a ${type} destination yet.`);
  return kind;
}
