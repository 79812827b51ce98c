import { jsonSchemaOf, type SchemaTable } from './json-schema.js';
import { META_TOOLS } from './meta.js';
import { tools } from './index.js';
import { DEFAULT_SELECTION, selects } from './toolsets.js';

type Tool = (typeof META_TOOLS)[number] | (typeof tools)[number];

function tableOf(list: Tool[]): SchemaTable {
  const table: SchemaTable = {};
  for (const t of list) {
    if (table[t.name]) throw new Error(`two tools named ${t.name}`);
    table[t.name] = { input: jsonSchemaOf(t.inputSchema, 'input'), output: jsonSchemaOf(t.outputSchema, 'output') };
  }
  return table;
}

/**
 * The JSON Schemas a default `berth mcp` session lists (the default tools and the meta tools),
 * computed from the declarations. The build embeds them in the bundle (scripts/bundle.mjs), so a
 * session's tools/list sends them without building those operations' zod schemas at all;
 * test/bundle/tool-schemas.test.ts checks the bundle lists what the declarations give.
 */
export function defaultListSchemas(): SchemaTable {
  return tableOf([...tools.filter((x) => selects(DEFAULT_SELECTION, x.op)), ...META_TOOLS]);
}

/** Every other tool's JSON Schemas: the build writes them beside the bundle (read when first listed). */
export function moreListSchemas(): SchemaTable {
  return tableOf(tools.filter((x) => !selects(DEFAULT_SELECTION, x.op)));
}
