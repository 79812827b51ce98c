#!/usr/bin/env node
/**
 * The house's layer rules and its no-cycle rule, checked over every import in src/ in every form:
 * `import`, `import type`, `export ... from`, `import()` (inline type imports too) and `require()`.
 * Biome's restricted-import rules miss the inline and dynamic forms, so `npm run lint` runs this.
 * Usage: node scripts/check-layers.mjs [srcDir]; exits 1 naming each violation.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Below the core: none of them imports the core, an engine or a door. */
const BASE = ['errors.ts', 'ids.ts', 'version.ts', 'config', 'logging', 'limits', 'store', 'auth', 'ssh', 's3', 'mail'];
const CORE = ['core', 'core/model', 'core/audit'];

/** Each room and the rooms it may import (its own files always). A room missing here fails the check. */
export const LAYERS = {
  'errors.ts': [],
  'ids.ts': [],
  'version.ts': [],
  ssh: [],
  s3: [],
  mail: [],
  config: ['errors.ts'],
  logging: ['errors.ts'],
  limits: ['errors.ts', 'config', 'logging'],
  store: ['errors.ts', 'ids.ts', 'config', 'ssh'],
  auth: ['errors.ts', 'ids.ts', 'config', 'store'],
  'core/model': [...BASE, 'core'],
  core: [...BASE, 'core/model', 'core/audit', 'core/operations'],
  'core/audit': [...BASE, 'core', 'core/model', 'core/operations'],
  'core/operations': [...BASE, ...CORE],
  // Engines and workers see the model and the ports, never the operations or a door.
  engine: [...BASE, 'core', 'core/model'],
  workers: [...BASE, ...CORE, 'engine'],
  'http-common': [...BASE, 'core', 'core/model'],
  'http-api': [...BASE, ...CORE, 'core/operations', 'http-common'],
  console: [...BASE, ...CORE, 'core/operations', 'http-common'],
  // stdio is its own composition root (assemble.ts); tasks reuse the workers' periodic timer.
  mcp: [...BASE, ...CORE, 'core/operations', 'http-common', 'workers', 'assemble.ts'],
  cli: [...BASE, ...CORE, 'core/operations', 'mcp', 'assemble.ts'],
  // Composition roots and entry points wire everything.
  'assemble.ts': '*',
  'serve.ts': '*',
  'cli.ts': '*',
  'http-server.ts': '*',
  'launcher.ts': '*',
  'docs.ts': '*',
};

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

function roomOf(root, file) {
  const parts = relative(root, file).split('/');
  if (parts.length === 1) return parts[0];
  if (parts[0] === 'core' && parts.length > 2 && ['model', 'audit', 'operations'].includes(parts[1])) return `core/${parts[1]}`;
  return parts[0];
}

/** Strongly connected components of more than one file (Tarjan), each a cycle to report. */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const c = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) found.push(c);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

export function checkLayers(srcDir, layers = LAYERS) {
  const root = resolve(srcDir);
  const files = sourceFiles(root);
  const known = new Set(files);
  const graph = new Map(files.map((f) => [f, []]));
  const problems = [];
  for (const file of files) {
    const from = roomOf(root, file);
    const allowed = layers[from];
    if (allowed === undefined) problems.push(`${relative(root, file)}: its room "${from}" has no layer rule (add it to scripts/check-layers.mjs)`);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const target = resolve(dirname(file), m[1]).replace(/\.js$/, '.ts');
      if (known.has(target)) graph.get(file).push(target);
      const to = roomOf(root, target);
      if (to === from || allowed === undefined || allowed === '*') continue;
      if (!allowed.includes(to)) problems.push(`${relative(root, file)}: imports ${m[1]} (${from} may not import ${to})`);
    }
  }
  for (const c of cycles(graph))
    problems.push(
      `import cycle: ${c
        .map((f) => relative(root, f))
        .reverse()
        .join(' -> ')}`,
    );
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const problems = checkLayers(process.argv[2] ?? 'src');
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`${problems.length} layer problem(s); the rules are in scripts/check-layers.mjs.`);
    process.exit(1);
  }
  console.log('layers: every import keeps the rules; no cycles.');
}
