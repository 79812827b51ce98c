// Preloaded into each `berth serve` of the soak bench (node --expose-gc --import this-file):
// measures the event loop's delay from inside the process, with no change to berth itself.
// On SIGUSR2 it collects garbage (so "heap used" is the live heap, not what the last GC left),
// writes {heapUsed, rss, eld} for the window since the previous signal to
// $BERTH_SOAK_PROBE_DIR/probe-<pid>.json, and starts a new window.
import fs from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const dir = process.env.BERTH_SOAK_PROBE_DIR;
if (dir) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const file = path.join(dir, `probe-${process.pid}.json`);
  const ms = (ns) => Math.round((ns / 1e6) * 10) / 10;
  process.on('SIGUSR2', () => {
    globalThis.gc?.();
    const m = process.memoryUsage();
    const out = { at: Date.now(), heapUsed: m.heapUsed, rss: m.rss, eld: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean) } };
    h.reset();
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(out));
    fs.renameSync(`${file}.tmp`, file);
  });
}
