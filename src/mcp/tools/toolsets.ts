import { TOOLSETS, type Toolset } from '../../core/operation.js';

/** `--toolsets` (and the HTTP header or query): group names, `default`, or `all`. */
export const TOOLSET_WORDS = ['default', 'all', ...TOOLSETS] as const;

export interface ToolSelection {
  /** Every operation listed; no meta tools are needed. */
  all: boolean;
  /** The default set is part of the list. */
  defaults: boolean;
  groups: Toolset[];
}

export const DEFAULT_SELECTION: ToolSelection = { all: false, defaults: true, groups: [] };

/** Parses a comma-separated selection; unknown words are an error that lists the accepted ones. */
export function parseToolsets(spec: string | undefined): ToolSelection {
  const words = (spec ?? '')
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter(Boolean);
  if (!words.length) return DEFAULT_SELECTION;
  const unknown = words.filter((w) => !(TOOLSET_WORDS as readonly string[]).includes(w));
  if (unknown.length) throw new Error(`unknown toolset ${unknown.join(', ')}; use ${TOOLSET_WORDS.join(', ')}`);
  return {
    all: words.includes('all'),
    defaults: words.includes('default'),
    groups: TOOLSETS.filter((t) => words.includes(t)),
  };
}

/** Whether an operation is listed under a selection. */
export function selects(sel: ToolSelection, op: { default?: boolean; toolset: Toolset }): boolean {
  return sel.all || (sel.defaults && op.default === true) || sel.groups.includes(op.toolset);
}
