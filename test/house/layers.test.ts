import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script, run by `npm run lint` as well
import { checkLayers } from '../../scripts/check-layers.mjs';

const check = checkLayers as (dir: string) => string[];
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A small src tree: each key a path under src/, each value its text. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'berth-layers-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const operations = { 'core/operations/index.ts': 'export interface Operation { name: string }\n' };

describe('the layer rules (scripts/check-layers.mjs, run by npm run lint)', () => {
  it("berth's own tree keeps them", () => {
    expect(check('src')).toEqual([]);
  });

  it.each([
    ['a plain import', "import { x } from '../core/operations/index.js';\n"],
    ['a type import', "import type { Operation } from '../core/operations/index.js';\n"],
    ['an inline type import', "export type Op = import('../core/operations/index.js').Operation;\n"],
    ['a dynamic import', "export const load = () => import('../core/operations/index.js');\n"],
    ['a re-export', "export * from '../core/operations/index.js';\n"],
  ])('catches %s from engine/ into core/operations', (_, text) => {
    const problems = check(tree({ ...operations, 'engine/runtime.ts': text }));
    expect(problems).toEqual(['engine/runtime.ts: imports ../core/operations/index.js (engine may not import core/operations)']);
  });

  it('catches a store that reaches up into the core, and an s3 client that does', () => {
    const problems = check(
      tree({ 'core/caller.ts': 'export const c = 1;\n', 'store/db.ts': "import { c } from '../core/caller.js';\n", 's3/client.ts': "import type { c } from '../core/caller.js';\n" }),
    );
    expect(problems.sort()).toEqual(['s3/client.ts: imports ../core/caller.js (s3 may not import core)', 'store/db.ts: imports ../core/caller.js (store may not import core)']);
  });

  it('names a folder without a rule', () => {
    expect(check(tree({ 'gadgets/thing.ts': 'export const t = 1;\n' }))).toEqual(['gadgets/thing.ts: its room "gadgets" has no layer rule (add it to scripts/check-layers.mjs)']);
  });

  it('finds a cycle through type imports within one room', () => {
    const problems = check(tree({ 'store/a.ts': "import type { B } from './b.js';\nexport type A = B;\n", 'store/b.ts': "export type B = import('./a.js').A;\n" }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^import cycle: store\/(a|b)\.ts -> store\/(a|b)\.ts$/);
  });
});
