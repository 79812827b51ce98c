import { z } from 'zod';
import { satisfies } from '../../auth/permissions.js';
import type { Caller } from '../../core/caller.js';
import type { Operation } from '../../core/operation.js';
import { agentInput, agentOutput } from './agent-view.js';
import { toolSchema } from './json-schema.js';

/** One MCP tool: an operation plus what an agent needs to read about it. */
export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  op: Operation;
  inputSchema: ReturnType<typeof toolSchema>;
  outputSchema: ReturnType<typeof toolSchema>;
  /** MCP structured content is an object; array outputs are carried as { items }. */
  wrapsArray: boolean;
  /** The hints as MCP defines them (readOnly, destructive, idempotent, openWorld). */
  hints: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  /** What goes on the wire: only the hints that differ from MCP's defaults (same meaning, fewer bytes). */
  annotations: Partial<ToolDefinition['hints']>;
}

/** MCP's defaults for absent hints: not read-only, destructive, not idempotent, open world. */
const HINT_DEFAULTS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

function wireHints(h: ToolDefinition['hints']): Partial<ToolDefinition['hints']> {
  const out: Partial<ToolDefinition['hints']> = {};
  for (const k of Object.keys(HINT_DEFAULTS) as (keyof typeof HINT_DEFAULTS)[]) {
    // destructiveHint and idempotentHint mean something only on a tool that changes things.
    if ((k === 'destructiveHint' || k === 'idempotentHint') && h.readOnlyHint) continue;
    if (h[k] !== HINT_DEFAULTS[k]) out[k] = h[k];
  }
  return out;
}

const isArraySchema = (s: z.ZodType) => (s as unknown as { _zod: { def: { type: string } } })._zod.def.type === 'array';

/**
 * The tools of an operation table. Only what listing and routing need is worked out here; a
 * tool's agent-view schemas are built on first use (toolSchema), so a process that lists a few
 * tools and calls one builds a few schemas, not every operation's.
 */
export function buildToolDefinitions(operations: readonly Operation[]): ToolDefinition[] {
  return operations.map((op) => {
    let wraps: boolean | undefined;
    const wrapsArray = () => (wraps ??= isArraySchema(op.output));
    const hints = {
      readOnlyHint: op.annotations.readOnly,
      destructiveHint: op.annotations.destructive,
      idempotentHint: op.annotations.idempotent,
      openWorldHint: op.annotations.openWorld,
    };
    return {
      name: op.name,
      title: op.title,
      description: op.description,
      op,
      inputSchema: toolSchema(() => agentInput(op), 'core', op.name),
      outputSchema: toolSchema(() => (wrapsArray() ? z.object({ items: op.output }) : agentOutput(op)), 'zod', op.name),
      get wrapsArray() {
        return wrapsArray();
      },
      hints,
      annotations: wireHints(hints),
    };
  });
}

export interface ToolFilter {
  readOnly?: boolean;
}

/**
 * The tools a caller may reach: what its token allows, narrowed by read-only mode. Which of them
 * are listed is the toolset selection's business (listedTools); the rest stay reachable.
 */
export function visibleTools(tools: readonly ToolDefinition[], caller: Pick<Caller, 'permissions' | 'rootTeam'>, filter: ToolFilter): ToolDefinition[] {
  return tools.filter(({ op }) => {
    if (op.permission !== 'authenticated' && !satisfies(caller.permissions, op.permission)) return false;
    if (op.access?.rootTeamOnly && !caller.rootTeam) return false;
    if (filter.readOnly && !op.annotations.readOnly) return false;
    return true;
  });
}
