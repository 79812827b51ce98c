import type { StandardSchemaWithJSON, Tool } from '@modelcontextprotocol/server';
import { restatesName } from '../session.js';
import { jsonSchemaOf } from './json-schema.js';
import type { MetaTool } from './meta.js';
import type { ToolDefinition } from './registry.js';

/** A tool as tools/list shows it: an operation's or a meta tool's texts, schemas and hints. */
export type ListedDef = Pick<ToolDefinition | MetaTool, 'name' | 'title' | 'description' | 'inputSchema' | 'outputSchema' | 'annotations'>;

type Json = Record<string, unknown>;
const LOCAL_DEFINITION_REF = /^#\/(\$defs|definitions)\/([^/~%]+)$/;

/** An output schema whose root is an object without saying `type` (the SDK's test, which adds it). */
function provablyObject(schema: Json, root: Json = schema): boolean {
  if ('properties' in schema || 'patternProperties' in schema || 'additionalProperties' in schema || 'required' in schema) return true;
  const ref = typeof schema.$ref === 'string' ? LOCAL_DEFINITION_REF.exec(schema.$ref) : null;
  if (ref && (root[ref[1]!] as Record<string, Json> | undefined)?.[ref[2]!]?.type === 'object') return true;
  for (const key of ['oneOf', 'anyOf', 'allOf']) {
    const members = schema[key];
    if (Array.isArray(members) && members.length > 0) {
      return members.every((m: unknown) => m !== null && typeof m === 'object' && ((m as Json).type === 'object' || provablyObject(m as Json, '$id' in (m as Json) ? {} : root)));
    }
  }
  return false;
}

/** A tool's input JSON Schema as the SDK lists it: an object at the root, said first. */
function inputJson(schema: StandardSchemaWithJSON): Tool['inputSchema'] {
  const json = jsonSchemaOf(schema, 'input');
  if (json.type !== undefined && json.type !== 'object') throw new Error(`MCP tool schemas must describe objects (got type: ${JSON.stringify(json.type)})`);
  return { type: 'object', ...json };
}

/** A tool's output JSON Schema as the SDK lists it. */
function outputJson(schema: StandardSchemaWithJSON): Tool['outputSchema'] {
  const json = jsonSchemaOf(schema, 'output');
  if (json.type === undefined && provablyObject(json)) return { type: 'object', ...json };
  return json as Tool['outputSchema'];
}

/**
 * One tool's tools/list entry, exactly as the SDK's McpServer lists a registered tool (same keys in
 * the same order): the title only where it says more than the name, the hints that differ from
 * MCP's defaults, and (2025 era) `execution` on the tools a client may run as a task.
 */
export function listedTool(def: ListedDef, taskOptional: boolean): Tool {
  const listed: Tool = {
    name: def.name,
    title: restatesName(def) ? undefined : def.title,
    description: def.description,
    inputSchema: inputJson(def.inputSchema),
    annotations: Object.keys(def.annotations).length ? def.annotations : undefined,
    icons: undefined,
    execution: taskOptional ? { taskSupport: 'optional' } : undefined,
    _meta: undefined,
  };
  listed.outputSchema = outputJson(def.outputSchema);
  return listed;
}

/** A value checked against a tool's schema, its issues written as the SDK writes them in a tool error. */
export async function schemaIssues(schema: StandardSchemaWithJSON, value: unknown): Promise<{ value: unknown; error?: string }> {
  const result = await schema['~standard'].validate(value);
  if (result.issues?.length) return { value, error: result.issues.map(formatIssue).join(', ') };
  return { value: 'value' in result ? result.value : value };
}

/** The SDK's rendering of a schema issue (validateStandardSchema). */
function formatIssue(issue: { message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> }): string {
  if (!issue.path?.length) return issue.message;
  return `${issue.path.map((p) => String(typeof p === 'object' ? p.key : p)).join('.')}: ${issue.message}`;
}
