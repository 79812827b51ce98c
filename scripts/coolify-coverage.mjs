#!/usr/bin/env node
// How much of Coolify's API berth serves: the operations in docs/coolify-api-operations.md
// (Coolify 4.3.11's openapi.json, method + path, grouped by Coolify's tags) against the paths and
// aliases in berth's own OpenAPI document, built from the operation declarations (dist/).
// Path parameters match whatever their names ({uuid} and {env_uuid} are both "a segment").
//
//   npm run build && node scripts/coolify-coverage.mjs [--missing] [--json]
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const LIST = path.join(ROOT, 'docs/coolify-api-operations.md');

/** Coolify's operations by area: [{ area, method, path }]. */
export function coolifyOperations(text = fs.readFileSync(LIST, 'utf8')) {
  const ops = [];
  let area;
  for (const line of text.split('\n')) {
    const h = /^## (.+)$/.exec(line);
    if (h) area = h[1].trim();
    const m = /^(GET|POST|PUT|PATCH|DELETE) (\/\S*)$/.exec(line.trim());
    if (m && area) ops.push({ area, method: m[1], path: m[2] });
  }
  return ops;
}

const shape = (p) => p.replace(/\{[^}]+\}/g, '{}');

/** Areas that need a third-party cloud or a git host's app (out of scope for berth for now). */
export const THIRD_PARTY = ['hetzner', 'digitalocean', 'vultr', 'github-apps', 'gitlab-apps', 'cloud-tokens'];

/** Covered / total per area, and what is missing, for berth's OpenAPI document. */
export function coverage(doc, ops = coolifyOperations()) {
  const served = new Set();
  for (const [p, methods] of Object.entries(doc.paths)) {
    if (!p.startsWith('/api/v1/')) continue;
    for (const m of Object.keys(methods)) served.add(`${m.toUpperCase()} ${shape(p.slice('/api/v1'.length))}`);
  }
  const areas = new Map();
  for (const op of ops) {
    const a = areas.get(op.area) ?? { area: op.area, covered: 0, total: 0, missing: [] };
    a.total++;
    if (served.has(`${op.method} ${shape(op.path)}`)) a.covered++;
    else a.missing.push(`${op.method} ${op.path}`);
    areas.set(op.area, a);
  }
  const list = [...areas.values()];
  const covered = list.reduce((n, a) => n + a.covered, 0);
  const pct = (n, d) => Math.round((n / d) * 1000) / 10;
  const inScope = list.filter((a) => !THIRD_PARTY.includes(a.area));
  const scopeCovered = inScope.reduce((n, a) => n + a.covered, 0);
  const scopeTotal = inScope.reduce((n, a) => n + a.total, 0);
  return { covered, total: ops.length, percent: pct(covered, ops.length), inScope: { covered: scopeCovered, total: scopeTotal, percent: pct(scopeCovered, scopeTotal) }, areas: list };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { buildOpenApi } = await import(path.join(ROOT, 'dist/http-api/openapi.js'));
  const { operations } = await import(path.join(ROOT, 'dist/core/operations/index.js'));
  const r = coverage(buildOpenApi(operations));
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(r, null, 2));
  } else {
    for (const a of r.areas) {
      console.log(`${a.area.padEnd(24)} ${String(a.covered).padStart(3)} / ${String(a.total).padEnd(3)}`);
      if (process.argv.includes('--missing')) for (const m of a.missing) console.log(`    missing ${m}`);
    }
    console.log(`\ncovered ${r.covered} of ${r.total} Coolify operations (${r.percent} %)`);
    console.log(`without third-party clouds and git apps (${THIRD_PARTY.join(', ')}): ${r.inScope.covered} of ${r.inScope.total} (${r.inScope.percent} %)`);
  }
}
