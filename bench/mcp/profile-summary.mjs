// Where the CPU time of a .cpuprofile went: self time by package (node_modules/<pkg>, berth's
// dist/<dir>, Node internals, GC), then the top functions by self and by inclusive time.
//
//   node bench/mcp/profile-summary.mjs FILE.cpuprofile [--top 25]
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

function bucketOf(frame) {
  const { url, functionName } = frame;
  if (!url) return functionName || '(anonymous native)';
  if (url.startsWith('node:')) {
    const m = /^node:internal\/(deps\/)?([^/]+)/.exec(url);
    return m ? `node:${m[2]}` : url;
  }
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (nm) return nm[1];
  const dist = /\/dist\/([^/]+?)(?:\.js)?(?:\/|$)/.exec(url);
  if (dist) return `berth dist/${dist[1]}`;
  const bench = /\/bench\/(.*)$/.exec(url);
  if (bench) return `bench/${bench[1]}`;
  return url;
}

const short = (frame) => {
  const file = frame.url ? frame.url.replace(/^file:\/\/.*?\/(node_modules|dist|bench)\//, '$1/') : '';
  return `${frame.functionName || '(anonymous)'} ${file}${file ? `:${frame.lineNumber + 1}` : ''}`;
};

export function summarize(file, top = 25) {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map();
  for (let i = 0; i < prof.samples.length; i++) {
    const id = prof.samples[i];
    self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
  }
  let idle = 0;
  let total = 0;
  const buckets = new Map();
  const selfByFn = new Map();
  const inclByFn = new Map();
  for (const [id, us] of self) {
    const node = byId.get(id);
    const name = node.callFrame.functionName;
    if (name === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const b = bucketOf(node.callFrame);
    buckets.set(b, (buckets.get(b) ?? 0) + us);
    const key = short(node.callFrame);
    selfByFn.set(key, (selfByFn.get(key) ?? 0) + us);
    // Inclusive: every distinct function on the stack of this sample.
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur).callFrame;
      if (f.functionName === '(root)') continue;
      const k = short(f);
      if (seen.has(k)) continue;
      seen.add(k);
      inclByFn.set(k, (inclByFn.get(k) ?? 0) + us);
    }
  }
  const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const lines = [];
  const wall = idle + total;
  lines.push(`busy ${(total / 1e6).toFixed(2)} s of ${(wall / 1e6).toFixed(2)} s sampled (${((100 * total) / wall).toFixed(0)}% of one core)`);
  lines.push('self time by package:');
  for (const [b, us] of [...buckets].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${b}`);
  lines.push('top functions, self time:');
  for (const [k, us] of [...selfByFn].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${k}`);
  lines.push('top functions, inclusive time:');
  for (const [k, us] of [...inclByFn].sort((a, b) => b[1] - a[1]).slice(0, top * 2)) lines.push(`  ${pct(us)}  ${k}`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node bench/mcp/profile-summary.mjs FILE.cpuprofile [--top N]');
    process.exit(2);
  }
  const i = process.argv.indexOf('--top');
  console.log(summarize(file, i > 0 ? Number(process.argv[i + 1]) : 25));
}
