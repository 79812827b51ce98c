import { z } from 'zod';
import type { ToolDefinition } from './registry.js';
import { toolSchema } from './json-schema.js';
import { TOOLSET_WORDS } from './toolsets.js';

/**
 * The tools that reach every other operation when the list is the small default one:
 * list_toolsets and enable_toolsets (for clients that follow tools/list_changed), and
 * describe_operation + call_operation (for clients that do not, and for stateless HTTP).
 * call_operation runs the operation exactly as its own tool would: the same permission check,
 * the same validation against the operation's own schema, the same answer.
 */
export interface MetaTool {
  name: string;
  title: string;
  description: string;
  inputSchema: ReturnType<typeof toolSchema>;
  outputSchema: ReturnType<typeof toolSchema>;
  annotations: Record<string, boolean>;
  /** Only where the session can announce a changed list (stdio). */
  needsListChanges?: boolean;
}

const opName = z
  .string()
  .regex(/^[a-z_]{1,64}$/)
  .describe('an operation (tool) name, e.g. create_project');

export const metaInputs = {
  list_toolsets: z.strictObject({}),
  enable_toolsets: z.strictObject({ toolsets: z.array(z.enum(TOOLSET_WORDS.filter((w) => w !== 'default') as [string, ...string[]])).min(1) }),
  describe_operation: z.strictObject({ name: opName }),
  call_operation: z.strictObject({ name: opName, arguments: z.record(z.string(), z.unknown()).optional().describe("the operation's own input") }),
};

const outputs = {
  list_toolsets: z.object({
    toolsets: z.array(z.object({ name: z.string(), description: z.string(), listed: z.boolean(), tools: z.array(z.string()) })),
    hint: z.string(),
  }),
  enable_toolsets: z.object({ added: z.array(z.string()) }),
  describe_operation: z.object({
    name: z.string(),
    title: z.string(),
    description: z.string(),
    toolset: z.string(),
    listed: z.boolean(),
    input_schema: z.record(z.string(), z.unknown()),
    output_schema: z.record(z.string(), z.unknown()),
    annotations: z.record(z.string(), z.boolean()),
  }),
  call_operation: z.object({ name: z.string(), result: z.unknown() }),
};

const READ = { readOnlyHint: true, openWorldHint: false };

export const META_TOOLS: readonly MetaTool[] = [
  {
    name: 'list_toolsets',
    title: 'List toolsets',
    description: 'The groups of berth operations this token can use, with their tool names. Start here when a tool you need is not in your list.',
    annotations: READ,
  },
  {
    name: 'enable_toolsets',
    title: 'Enable toolsets',
    description: 'Add whole groups of tools to your list (or "all"); the list changes at once. If your client does not refresh its tool list, use describe_operation and call_operation instead.',
    annotations: READ,
    needsListChanges: true,
  },
  {
    name: 'describe_operation',
    title: 'Describe an operation',
    description: "Any berth operation's description and full input and output JSON Schemas, listed or not.",
    annotations: READ,
  },
  {
    name: 'call_operation',
    title: 'Call any operation',
    description:
      'Run any berth operation this token may use by name, with its own arguments (validated against its own schema, as its tool would). For operations not in your list; see list_toolsets and describe_operation.',
    annotations: {},
  },
].map((t) => ({
  ...t,
  inputSchema: toolSchema(() => metaInputs[t.name as keyof typeof metaInputs], 'core', t.name),
  outputSchema: toolSchema(() => outputs[t.name as keyof typeof outputs], 'zod', t.name),
}));

/** The hint context of a tool's errors: what it is about and where to find its ids. */
export function hintContext(tool: ToolDefinition, all: readonly ToolDefinition[]): { thing?: string; listTool?: string } {
  const prefix = tool.op.http.path.split('/{')[0]!;
  const list = all.find((t) => t.name.startsWith('list_') && t.op.http.method === 'GET' && t.op.http.path === prefix);
  if (!list) return {};
  return {
    listTool: list.name,
    thing: list.name
      .replace(/^list_/, '')
      .replace(/_/g, ' ')
      .replace(/s$/, ''),
  };
}
