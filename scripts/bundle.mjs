// Bundles the compiled CLI (dist/) into what `berth` ships as (dist/bundle/):
//   berth.cjs        the whole CLI as one CommonJS file: Node 20 spent most of a cold start
//                    resolving, loading and compiling hundreds of ES modules (Kysely, the MCP SDK);
//   berth.cjs.cache  a V8 code cache of it, made by a training run of `berth mcp` below;
//   cli.js           the launcher (src/launcher.ts) that runs berth.cjs through that cache.
//   tool-schemas.json  the default tool list's JSON Schemas embedded in berth.cjs (a record of them);
//   tool-schemas-more.json  every other tool's, read by berth.cjs when one of them is first listed.
// Modules reached only by a dynamic import (serve, the engine runtime) are evaluated only when used.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';

const OUT = 'dist/bundle';
const BUNDLE = `${OUT}/berth.cjs`;
const LAUNCHER = `${OUT}/cli.js`;

// Names are fixed but a previous layout's files (chunks) must not linger.
fs.rmSync(OUT, { recursive: true, force: true });

// The default tool list's JSON Schemas, computed from the declarations (tsc's output) and
// embedded: a session lists them without building those operations' zod schemas
// (src/mcp/tools/json-schema.ts reads them; test/bundle/tool-schemas.test.ts checks them).
const { defaultListSchemas, moreListSchemas } = await import('../dist/mcp/tools/schema-table.js');
const { MORE_TOOL_SCHEMAS_FILE } = await import('../dist/mcp/tools/json-schema.js');
const toolSchemas = JSON.stringify(defaultListSchemas());

/**
 * zod exports every language's error messages as `z.locales` (300 KB, a ninth of the bundle, read
 * at every start); berth and the MCP SDK only use the English default, which zod's schemas import
 * themselves. The namespace keeps `en` alone.
 */
const zodWithoutLocales = {
  name: 'zod-without-locales',
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) => (/[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: 'zod-locales', namespace: 'berth-zod-locales' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'berth-zod-locales' }, () => ({ contents: "export { default as en } from 'zod/v4/locales/en.js';", resolveDir: process.cwd(), loader: 'js' }));
  },
};

await build({
  entryPoints: ['dist/cli.js'],
  outfile: BUNDLE,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minifySyntax: true,
  minifyWhitespace: true,
  sourcemap: 'linked',
  // License notices go to berth.cjs.LEGAL.txt: one non-ASCII letter in a comment made V8 hold the
  // whole 3.7 MB source as a two-byte string (read, hashed and scanned at every start).
  legalComments: 'external',
  // Native code, worker-loaded transports and optional heavy clients stay ordinary requires, and
  // so do the packages a `berth mcp` session never loads (fastify: serve; tar and undici: engines
  // and remote mode): outside the bundle, the 2 MB an MCP client's spawn reads and V8 takes in
  // are 1.7 MB less (about 7% of a cold start).
  // The console's passkey library (@simplewebauthn/server, with its ASN.1 and X.509 stack) is
  // serve's alone as well, and so is the OAuth server (oidc-provider with Koa and jose: 0.7 MB,
  // a fifth of the bundle every `berth mcp` spawn read; Node 20.19+ requires it as an ES module).
  external: ['better-sqlite3', 'pg', 'pino-pretty', 'ioredis', 'nodemailer', 'ssh2', 'fastify', 'tar', 'undici', '@simplewebauthn/server', 'oidc-provider'],
  define: { 'import.meta.url': '__berthModuleUrl', __BERTH_TOOL_SCHEMAS__: JSON.stringify(toolSchemas) },
  // Strict, as the ES modules it is made of were (esbuild's own "use strict" comes after this line).
  banner: { js: "'use strict'; var __berthModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
  plugins: [zodWithoutLocales],
  logLevel: 'warning',
});
// What was embedded, for the test that holds it to the declarations and for a reader.
fs.writeFileSync(`${OUT}/tool-schemas.json`, toolSchemas);
// The rest: every tool of `--toolsets all` listed without building its zod schemas (json-schema.ts).
fs.writeFileSync(`${OUT}/${MORE_TOOL_SCHEMAS_FILE}`, JSON.stringify(moreListSchemas()));
// esbuild escapes non-ASCII text in strings but not in regular expressions or template literals:
// one such character (a µ in a compose regex, a · in a console page) made V8 hold the whole 2.7 MB
// source as two-byte text at every start. Written as \u escapes, it means the same in a regex, a
// string, a template's cooked text, an identifier or a comment (berth reads no template's .raw).
let code = fs.readFileSync(BUNDLE, 'utf8');
// The launcher wraps the bundle in a function, where a hashbang line would be a syntax error; it
// becomes an empty line, so the source map's line numbers still hold.
if (code.startsWith('#!')) code = code.slice(code.indexOf('\n'));
code = code.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
fs.writeFileSync(BUNDLE, code);

fs.copyFileSync('dist/launcher.js', LAUNCHER);
fs.chmodSync(LAUNCHER, 0o755);

await train();

/**
 * One real `berth mcp` session (initialize, tools/list, tools/call) on a throwaway store, with the
 * launcher told to write the code cache as the process exits: everything that session compiled
 * is in the cache.
 */
async function train() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-train-'));
  const env = { PATH: process.env.PATH, LOG_LEVEL: 'silent' };
  try {
    const { token } = JSON.parse(execFileSync(process.execPath, [LAUNCHER, 'init', '--json', '--data', dataDir], { env, encoding: 'utf8' }));
    await new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [LAUNCHER, 'mcp', '--data', dataDir], {
        env: { ...env, BERTH_TOKEN: token, BERTH_CODE_CACHE_TRAINING: '1' },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const send = (message) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
      send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'berth-build', version: '1' } } });
      send({ method: 'notifications/initialized' });
      send({ id: 2, method: 'tools/list' });
      send({ id: 3, method: 'tools/call', params: { name: 'get_current_team', arguments: {} } });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        if (/"id":3\b/.test(out)) child.stdin.end();
      });
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        if (code === 0 && /"id":3\b/.test(out)) resolve();
        else reject(new Error(`training run of berth mcp failed (${signal ?? code}):\n${out.slice(0, 2000)}`));
      });
    });
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  if (!fs.existsSync(`${BUNDLE}.cache`)) throw new Error('the training run wrote no code cache');
}
