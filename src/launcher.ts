#!/usr/bin/env node
/**
 * The `berth` command as shipped (dist/bundle/cli.js): runs the whole CLI, bundled as one
 * CommonJS file (berth.cjs), through a V8 code cache made at build time by a training run of
 * `berth mcp` (scripts/bundle.mjs). Compiling the bundle was the largest part of a cold
 * `berth mcp`, which a desktop client spawns for every session; Node 20 has no compile cache of
 * its own for ES modules. A missing, stale or rejected cache only costs that compile.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

const dir = import.meta.dirname;
const file = path.join(dir, 'berth.cjs');
const cacheFile = `${file}.cache`;
// The build writes the bundle as ASCII (scripts/bundle.mjs), so latin1 reads the same text without
// UTF-8 decoding: measured, a quarter less CPU for the 2.7 MB read at every start.
const source = fs.readFileSync(file, 'latin1');

// V8 checks a cache against the source's length only: the cache starts with the size and
// modification time of the bundle it was made from, so an edited bundle never runs another
// bundle's bytecode. (A sha256 of the source cost more than 4% of a cold start.) A copy that keeps
// timestamps (cp -p, fs.cpSync) may round them below the millisecond, hence the tolerance.
const stat = fs.statSync(file);
const header = `berth-cache ${stat.size} ${stat.mtimeMs}\n`;
let cachedData: Buffer | undefined;
let cacheState = 'missing';
try {
  const stored = fs.readFileSync(cacheFile);
  cacheState = 'stale';
  const end = stored.indexOf(10);
  const [tag, size, mtime] = stored.subarray(0, Math.max(0, end)).toString('latin1').split(' ');
  if (tag === 'berth-cache' && Number(size) === stat.size && Math.abs(Number(mtime) - stat.mtimeMs) < 2) cachedData = stored.subarray(end + 1);
} catch {
  // No cache (an unusual build): compile as usual.
}

const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: file,
  cachedData,
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
if (process.env.BERTH_CODE_CACHE_TRAINING === '1') {
  // The training run writes the cache as it exits, when everything it ran has been compiled.
  process.on('exit', () => {
    try {
      fs.writeFileSync(cacheFile, Buffer.concat([Buffer.from(header, 'latin1'), script.createCachedData()]));
    } catch (err) {
      process.stderr.write(`berth: could not write the code cache ${cacheFile}: ${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  });
}
if (process.env.BERTH_CODE_CACHE_REPORT === '1') {
  process.stderr.write(`berth: code cache ${cachedData ? (script.cachedDataRejected ? 'rejected' : 'used') : cacheState}\n`);
}
const module = { exports: {} };
(script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(file), module, file, dir);
