import { z } from 'zod';
import { satisfies } from '../auth/permissions.js';
import type { Caller } from '../core/caller.js';
import type { Operation, Toolset } from '../core/operation.js';
import { toolText } from './descriptions.js';
import { toolSchema } from './schema.js';

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
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

const isArraySchema = (s: z.ZodType) => (s as unknown as { _zod: { def: { type: string } } })._zod.def.type === 'array';

export function buildToolDefinitions(operations: readonly Operation[]): ToolDefinition[] {
  return operations.map((op) => {
    const text = toolText(op.name);
    if (!text) throw new Error(`Operation ${op.name} has no tool description in src/tools/descriptions.ts`);
    const wrapsArray = isArraySchema(op.output);
    const output = wrapsArray ? z.object({ items: op.output }) : op.output;
    return {
      name: op.name,
      title: text.title,
      description: text.description,
      op,
      inputSchema: toolSchema(op.input, 'core'),
      outputSchema: toolSchema(output, 'zod'),
      wrapsArray,
      annotations: {
        readOnlyHint: op.annotations.readOnly,
        destructiveHint: op.annotations.destructive,
        idempotentHint: op.annotations.idempotent,
        openWorldHint: op.annotations.openWorld,
      },
    };
  });
}

export interface ToolFilter {
  readOnly?: boolean;
  /** Only these groups; all when absent. */
  toolsets?: readonly Toolset[];
}

/** The tools a caller sees: what its token allows, narrowed by read-only mode and toolsets. */
export function visibleTools(tools: readonly ToolDefinition[], caller: Pick<Caller, 'permissions' | 'rootTeam'>, filter: ToolFilter): ToolDefinition[] {
  return tools.filter(({ op }) => {
    if (op.permission !== 'authenticated' && !satisfies(caller.permissions, op.permission)) return false;
    if (op.access?.rootTeamOnly && !caller.rootTeam) return false;
    if (filter.readOnly && !op.annotations.readOnly) return false;
    if (filter.toolsets && !filter.toolsets.includes(op.toolset)) return false;
    return true;
  });
}
