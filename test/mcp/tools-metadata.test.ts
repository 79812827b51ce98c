import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../src/core/operations/index.js';
import { generatedSections, replaceSection } from '../../src/docs.js';
import { tools } from '../../src/mcp/tools/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { httpClient } from '../helpers/mcp.js';
import { restatesName } from '../../src/mcp/server.js';

/** MCP's meaning of an absent hint. */
const MCP_HINT_DEFAULTS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };
const hint = (t: Record<string, unknown>, k: keyof typeof MCP_HINT_DEFAULTS): boolean => (t.annotations as Record<string, boolean> | undefined)?.[k] ?? MCP_HINT_DEFAULTS[k];

const SNAP_DIR = path.resolve(import.meta.dirname, '../__toolsnaps__');
const UPDATE = process.env.UPDATE_TOOLSNAPS === '1';

let s: TestServer;
let wire: Array<Record<string, unknown> & { name: string }>;
beforeAll(async () => {
  s = await startTestServer();
  const c = await httpClient('v2-legacy', s.url, s.rootToken);
  wire = (await c.listTools()).tools as never;
  await c.close();
});
afterAll(() => s.stop());

describe('tool metadata', () => {
  it('every tool has a snake_case name, a title, a description, annotations and object schemas', () => {
    expect(wire.length).toBe(operations.length);
    for (const t of wire) {
      expect(t.name).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
      // A title is sent unless it only restates the name (clients show the name then).
      const text = tools.find((x) => x.name === t.name)!;
      if (restatesName(text)) expect(t.title, t.name).toBeUndefined();
      else expect(t.title, t.name).toBe(text.title);
      expect(String(t.description).length).toBeGreaterThan(30);
      // Only hints that differ from MCP's defaults are sent; each one that is sent is a boolean.
      const a = (t.annotations ?? {}) as Record<string, unknown>;
      for (const [k, v] of Object.entries(a)) {
        expect(Object.keys(MCP_HINT_DEFAULTS), `${t.name}.${k}`).toContain(k);
        expect(typeof v, `${t.name}.${k}`).toBe('boolean');
        expect(v, `${t.name}.${k} repeats the default`).not.toBe(MCP_HINT_DEFAULTS[k as keyof typeof MCP_HINT_DEFAULTS]);
      }
      const op = operations.find((o) => o.name === t.name)!;
      expect(hint(t, 'readOnlyHint'), t.name).toBe(op.annotations.readOnly);
      expect(hint(t, 'openWorldHint'), t.name).toBe(op.annotations.openWorld);
      if (!op.annotations.readOnly) {
        expect(hint(t, 'destructiveHint'), t.name).toBe(op.annotations.destructive);
        expect(hint(t, 'idempotentHint'), t.name).toBe(op.annotations.idempotent);
      }
      expect((t.inputSchema as { type: string }).type).toBe('object');
      expect((t.outputSchema as { type: string }).type).toBe('object');
    }
  });

  it('the spec’s operations have exactly their names, and disable_api is destructive', () => {
    const names = new Set(wire.map((t) => t.name));
    for (const n of ['list_teams', 'get_current_team', 'enable_api', 'disable_api']) expect(names.has(n)).toBe(true);
    const disable = wire.find((t) => t.name === 'disable_api')!;
    expect(hint(disable, 'destructiveHint')).toBe(true);
    expect(hint(disable, 'readOnlyHint')).toBe(false);
    // A read-only tool carries no destructive or idempotent hint (they mean nothing there).
    for (const t of wire) {
      const a = (t.annotations ?? {}) as Record<string, unknown>;
      if (a.readOnlyHint) expect(Object.keys(a).sort(), t.name).toEqual(['readOnlyHint', ...('openWorldHint' in a ? ['openWorldHint'] : [])].sort());
    }
  });
});

describe('tool schema snapshots (the tools/list wire form)', () => {
  it('match the reviewed snapshots; UPDATE_TOOLSNAPS=1 rewrites them', () => {
    fs.mkdirSync(SNAP_DIR, { recursive: true });
    const changed: string[] = [];
    for (const t of wire) {
      const file = path.join(SNAP_DIR, `${t.name}.snap.json`);
      const text = JSON.stringify(t, null, 2) + '\n';
      const exists = fs.existsSync(file);
      if (UPDATE || (!exists && !process.env.CI)) {
        fs.writeFileSync(file, text);
      } else if (!exists || fs.readFileSync(file, 'utf8') !== text) {
        changed.push(t.name);
      }
    }
    const orphans = fs.readdirSync(SNAP_DIR).filter((f) => !wire.some((t) => `${t.name}.snap.json` === f));
    expect(changed, 'tool schemas changed: review, then run UPDATE_TOOLSNAPS=1 npm test').toEqual([]);
    expect(orphans, 'snapshots of tools that no longer exist').toEqual([]);
  });
});

describe('generated docs', () => {
  it.each(generatedSections(operations, tools))('$file: the $name table matches the declarations (npm run docs regenerates it)', ({ file, name, body }) => {
    const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../..', file), 'utf8');
    expect(doc).toBe(replaceSection(doc, name, body));
  });
});
