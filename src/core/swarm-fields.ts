import { isMap, parseDocument } from 'yaml';
import { z } from 'zod';
import { validationError } from '../errors.js';

/**
 * Coolify's swarm fields of an application: `swarm_replicas` (default 1) and
 * `swarm_placement_constraints`, YAML sent base64-encoded that Coolify merges into the compose
 * service's `deploy:` section. berth takes its `placement:` part (constraints, preferences,
 * max_replicas_per_node), keeps the text and shows it base64 as Coolify does. They apply on a
 * swarm destination and are kept (unused) on a standalone one, as in Coolify.
 */
export const DEFAULT_SWARM_REPLICAS = 1;

export const swarmInput = {
  swarm_replicas: z.number().int().min(0).max(100).meta({ 'berth.brief': true }).optional().describe('Swarm destinations: how many tasks (replicas) run. Default 1.'),
  swarm_placement_constraints: z
    .string()
    .max(16_384)
    .nullable()
    .meta({ 'berth.brief': true })
    .optional()
    .describe("Swarm destinations: base64 YAML of the service's placement, e.g. `placement:\\n  constraints:\\n    - node.role == worker`."),
};

export const swarmOutput = {
  swarm_replicas: z.number().int().meta({ 'berth.brief': true }),
  swarm_placement_constraints: z.string().nullable().meta({ 'berth.brief': true }),
};

export interface SwarmFields {
  swarm_replicas?: number;
  /** The YAML text, decoded. */
  swarm_placement_constraints?: string | null;
}

/** Docker's Placement, as the service spec takes it. */
export interface SwarmPlacement {
  Constraints?: string[];
  Preferences?: { Spread: { SpreadDescriptor: string } }[];
  MaxReplicas?: number;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const CONSTRAINT = /^[A-Za-z0-9_.\-[\]]+\s*(==|!=)\s*\S.*$/;

const problem = (msg: string) => validationError({ swarm_placement_constraints: [msg] });

/** The placement a stored text asks for; 422 naming what is wrong. */
export function placementOf(text: string | null | undefined): SwarmPlacement | null {
  if (!text?.trim()) return null;
  const doc = parseDocument(text);
  if (doc.errors.length) throw problem(`Not YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
  if (!isMap(doc.contents)) throw problem('Write a YAML mapping with a placement: key (constraints, preferences, max_replicas_per_node).');
  const top = doc.toJS() as Record<string, unknown>;
  const other = Object.keys(top).filter((k) => k !== 'placement');
  if (other.length) throw problem(`Only placement: is taken from the deploy section (replicas are swarm_replicas, limits are limits_*); remove ${other.join(', ')}.`);
  const p = top.placement as Record<string, unknown> | null;
  if (!p || typeof p !== 'object' || Array.isArray(p)) throw problem('placement: must be a mapping (constraints, preferences, max_replicas_per_node).');
  const unknown = Object.keys(p).filter((k) => !['constraints', 'preferences', 'max_replicas_per_node'].includes(k));
  if (unknown.length) throw problem(`placement: takes constraints, preferences and max_replicas_per_node; not ${unknown.join(', ')}.`);
  const out: SwarmPlacement = {};
  if (p.constraints !== undefined) {
    if (!Array.isArray(p.constraints) || p.constraints.some((c) => typeof c !== 'string' || !CONSTRAINT.test(c.trim()))) {
      throw problem('constraints: a list of expressions such as "node.role == worker" or "node.labels.zone != b".');
    }
    out.Constraints = p.constraints.map((c: string) => c.trim());
  }
  if (p.preferences !== undefined) {
    const prefs = p.preferences;
    if (!Array.isArray(prefs) || prefs.some((x) => !x || typeof x !== 'object' || typeof (x as { spread?: unknown }).spread !== 'string')) {
      throw problem('preferences: a list of { spread: node.labels.KEY }.');
    }
    out.Preferences = prefs.map((x: { spread: string }) => ({ Spread: { SpreadDescriptor: x.spread } }));
  }
  if (p.max_replicas_per_node !== undefined) {
    if (!Number.isInteger(p.max_replicas_per_node) || (p.max_replicas_per_node as number) < 1) throw problem('max_replicas_per_node: a whole number of at least 1.');
    out.MaxReplicas = p.max_replicas_per_node as number;
  }
  return out;
}

/** The YAML text from either form (base64 as Coolify sends it, or plain), checked; null clears. */
export function decodePlacement(raw: string | null): string | null {
  if (raw === null || !raw.trim()) return null;
  const compact = raw.replace(/\s/g, '');
  let text = raw;
  if (BASE64.test(compact) && compact.length % 4 === 0) {
    const decoded = Buffer.from(compact, 'base64').toString('utf8');
    if (/^[\x09\x0a\x0d\x20-\x7e]*$/.test(decoded)) text = decoded;
  }
  placementOf(text);
  return text.replace(/\r\n?/g, '\n').trim();
}

/** Sets the swarm fields an input gives on a config. */
export function applySwarmFields(c: SwarmFields, i: Record<string, unknown>): void {
  if (i.swarm_replicas !== undefined) c.swarm_replicas = i.swarm_replicas as number;
  if (i.swarm_placement_constraints !== undefined) c.swarm_placement_constraints = decodePlacement(i.swarm_placement_constraints as string | null);
}

export const swarmView = (c: SwarmFields) => ({
  swarm_replicas: c.swarm_replicas ?? DEFAULT_SWARM_REPLICAS,
  swarm_placement_constraints: c.swarm_placement_constraints ? Buffer.from(c.swarm_placement_constraints, 'utf8').toString('base64') : null,
});
