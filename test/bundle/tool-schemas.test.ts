import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tools } from '../../src/mcp/tools/index.js';
import { jsonSchemaOf } from '../../src/mcp/tools/json-schema.js';
import { META_TOOLS } from '../../src/mcp/tools/meta.js';
import { defaultListSchemas } from '../../src/mcp/tools/schema-table.js';
import { DEFAULT_SELECTION, selects } from '../../src/mcp/tools/toolsets.js';
import { CLI, stdioClient } from '../helpers/mcp.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The shipped bundle lists the default tools from JSON Schemas the build computed and embedded
 * (scripts/bundle.mjs); these tests hold it to what the declarations give when computed at run
 * time, byte for byte, so the embedded table can never drift from the operations it describes.
 */
const BUNDLE_DIR = path.dirname(CLI);
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** What the SDK sends for a schema the tool gives it (it puts type: object first on inputs). */
const asListed = (input: Record<string, unknown>) => ({ type: 'object', ...input });

describe('the default tool list in the shipped bundle', () => {
  it('sends exactly the JSON Schemas the declarations give, for every listed tool', async () => {
    const c = await stdioClient('v2-legacy', s.dataDir, s.rootToken, ['--toolsets', 'default']);
    const listed = (await c.listTools()).tools;
    await c.close();
    const expected = [...tools.filter((t) => selects(DEFAULT_SELECTION, t.op)), ...META_TOOLS];
    expect(listed.map((t) => t.name).sort()).toEqual(expected.map((t) => t.name).sort());
    for (const t of expected) {
      const wire = listed.find((x) => x.name === t.name)!;
      expect(JSON.stringify(wire.inputSchema), `${t.name} input`).toBe(JSON.stringify(asListed(jsonSchemaOf(t.inputSchema, 'input'))));
      expect(JSON.stringify(wire.outputSchema), `${t.name} output`).toBe(JSON.stringify(jsonSchemaOf(t.outputSchema, 'output')));
    }
  });

  it('the build embedded the table the declarations give (dist/bundle/tool-schemas.json is what it embedded)', () => {
    const embedded = fs.readFileSync(path.join(BUNDLE_DIR, 'tool-schemas.json'), 'utf8');
    expect(embedded).toBe(JSON.stringify(defaultListSchemas()));
    // esbuild writes it as a string literal; a fragment without escapes is found as it is.
    expect(fs.readFileSync(path.join(BUNDLE_DIR, 'berth.cjs'), 'latin1')).toContain(JSON.stringify({ get_current_team: defaultListSchemas().get_current_team }).slice(1, -1));
  });
});
