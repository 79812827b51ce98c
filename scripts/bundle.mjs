// Bundles the compiled CLI into a few files: Node 20 spends most of a cold start resolving and
// loading hundreds of small ES modules (Kysely, the MCP SDK), which matters for `berth mcp`,
// spawned by a desktop client for every session. `serve` and `mcp` stay separate chunks.
import fs from 'node:fs';
import { build } from 'esbuild';

// Chunk names change with their content: start empty so stale chunks never pile up.
fs.rmSync('dist/bundle', { recursive: true, force: true });

await build({
  entryPoints: ['dist/cli.js'],
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minifySyntax: true,
  minifyWhitespace: true,
  sourcemap: 'linked',
  // Native code, worker-loaded transports and optional heavy clients stay ordinary imports.
  external: ['better-sqlite3', 'pino', 'pino-pretty', 'ioredis', 'nodemailer'],
  banner: { js: "import { createRequire as __berthRequire } from 'node:module'; const require = __berthRequire(import.meta.url);" },
  logLevel: 'warning',
});
