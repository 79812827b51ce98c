import { jsonSchemaOf, type SchemaTable } from './json-schema.js';
import { META_TOOLS } from './meta.js';
import { tools } from './index.js';
import { DEFAULT_SELECTION, selects } from './toolsets.js';

/**
 * The JSON Schemas a default `berth mcp` session lists (the default tools and the meta tools),
 * computed from the declarations. The build embeds them in the bundle (scripts/bundle.mjs), so a
 * session's tools/list sends them without building those operations' zod schemas at all;
 * test/bundle/tool-schemas.test.ts checks the bundle lists what the declarations give.
 */
export function defaultListSchemas(): SchemaTable {
  const table: SchemaTable = {};
  for (const t of [...tools.filter((x) => selects(DEFAULT_SELECTION, x.op)), ...META_TOOLS]) {
    if (table[t.name]) throw new Error(`two tools named ${t.name}`);
    table[t.name] = { input: jsonSchemaOf(t.inputSchema, 'input'), output: jsonSchemaOf(t.outputSchema, 'output') };
  }
  return table;
}
