import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tools } from '../../src/mcp/tools/index.js';
import { jsonSchemaOf, MORE_TOOL_SCHEMAS_FILE } from '../../src/mcp/tools/json-schema.js';
import { META_TOOLS } from '../../src/mcp/tools/meta.js';
import { defaultListSchemas, moreListSchemas } from '../../src/mcp/tools/schema-table.js';
import { DEFAULT_SELECTION, selects } from '../../src/mcp/tools/toolsets.js';
import { CLI, stdioClient } from '../helpers/mcp.js';
import { storeEnv } from '../helpers/store.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The shipped bundle lists every tool from JSON Schemas the build computed (scripts/bundle.mjs):
 * the default list's embedded in the bundle, the others' in a file beside it. These tests hold
 * both to what the declarations give when computed at run time, byte for byte, so the build's
 * tables can never drift from the operations they describe.
 */
const BUNDLE_DIR = path.dirname(CLI);
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** What the SDK sends for a schema the tool gives it (it puts type: object first on inputs). */
const asListed = (input: Record<string, unknown>) => ({ type: 'object', ...input });

/** Lists the bundle's tools for a selection and compares each with the run-time computation. */
async function expectListedAsDeclared(toolsets: string, expected: Array<(typeof META_TOOLS)[number] | (typeof tools)[number]>): Promise<void> {
  const c = await stdioClient('v2-legacy', s.dataDir, s.rootToken, ['--toolsets', toolsets]);
  const listed = (await c.listTools()).tools;
  await c.close();
  expect(listed.map((t) => t.name).sort()).toEqual(expected.map((t) => t.name).sort());
  for (const t of expected) {
    const wire = listed.find((x) => x.name === t.name)!;
    expect(JSON.stringify(wire.inputSchema), `${t.name} input`).toBe(JSON.stringify(asListed(jsonSchemaOf(t.inputSchema, 'input'))));
    expect(JSON.stringify(wire.outputSchema), `${t.name} output`).toBe(JSON.stringify(jsonSchemaOf(t.outputSchema, 'output')));
  }
}

describe('the tool lists in the shipped bundle', () => {
  it('sends exactly the JSON Schemas the declarations give, for every tool of the default list', async () => {
    await expectListedAsDeclared('default', [...tools.filter((t) => selects(DEFAULT_SELECTION, t.op)), ...META_TOOLS]);
  });

  it('sends exactly the JSON Schemas the declarations give, for every tool of --toolsets all', async () => {
    // Every operation is a tool of its own here, so the meta tools that reach the rest are not listed.
    await expectListedAsDeclared('all', tools);
  });

  it("the build wrote every other tool's schemas beside the bundle, and none of the default list", () => {
    const more = fs.readFileSync(path.join(BUNDLE_DIR, MORE_TOOL_SCHEMAS_FILE), 'utf8');
    expect(more).toBe(JSON.stringify(moreListSchemas()));
    const names = Object.keys(JSON.parse(more));
    expect(names.length + Object.keys(defaultListSchemas()).length).toBe(tools.length + META_TOOLS.length);
    expect(names.filter((n) => n in defaultListSchemas())).toEqual([]);
  });

  it('a tool outside the default list is listed from the file beside the bundle, not computed', async () => {
    // A copy of the bundle whose file says something the declarations do not: what it lists shows
    // which one it read. Without the file the copy still lists what the declarations give.
    const dir = fs.mkdtempSync(path.join(path.dirname(BUNDLE_DIR), 'bundle-more-'));
    try {
      for (const f of ['cli.js', 'berth.cjs', 'berth.cjs.cache']) fs.cpSync(path.join(BUNDLE_DIR, f), path.join(dir, f), { preserveTimestamps: true });
      const name = Object.keys(moreListSchemas())[0]!;
      const listedInput = async () => {
        const c = new Client({ name: 'bundle-test', version: '1.0.0' });
        await c.connect(
          new StdioClientTransport({
            command: process.execPath,
            args: [path.join(dir, 'cli.js'), 'mcp', '--toolsets', 'all', ...['--data', s.dataDir]],
            env: { BERTH_TOKEN: s.rootToken, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir) },
            stderr: 'pipe',
          }),
        );
        const listed = (await c.listTools()).tools.find((t) => t.name === name)!;
        await c.close();
        return listed.inputSchema as Record<string, unknown>;
      };
      expect(await listedInput()).toEqual(asListed(jsonSchemaOf(tools.find((t) => t.name === name)!.inputSchema, 'input')));
      const table = moreListSchemas();
      table[name]!.input = { ...table[name]!.input, description: 'read from the file' };
      fs.writeFileSync(path.join(dir, MORE_TOOL_SCHEMAS_FILE), JSON.stringify(table));
      expect((await listedInput()).description).toBe('read from the file');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the build embedded the table the declarations give (dist/bundle/tool-schemas.json is what it embedded)', () => {
    const embedded = fs.readFileSync(path.join(BUNDLE_DIR, 'tool-schemas.json'), 'utf8');
    expect(embedded).toBe(JSON.stringify(defaultListSchemas()));
    // esbuild writes it as a string literal; a fragment without escapes is found as it is.
    expect(fs.readFileSync(path.join(BUNDLE_DIR, 'berth.cjs'), 'latin1')).toContain(JSON.stringify({ get_current_team: defaultListSchemas().get_current_team }).slice(1, -1));
  });
});
