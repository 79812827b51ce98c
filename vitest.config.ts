import fs from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that never open a store (engines, SSH, pure rules, the launcher, the MCP conformance
 * script's own instance): the PostgreSQL run leaves them to the SQLite run, where they already ran.
 */
const STORE_FREE = [
  'test/engine/**',
  'test/ssh/**',
  'test/core/**',
  'test/auth/*.property.test.ts',
  'test/cli/launcher.test.ts',
  'test/mcp/conformance.test.ts',
  'test/limits/job-queues.test.ts',
  'test/mcp/remote/paced-gate.test.ts',
  // The browser drives pages; the console's store behaviour runs on both stores in session.test.ts.
  'test/console/browser.test.ts',
  // Likewise: the live views' streams run on both stores in live.test.ts.
  'test/console/live-browser.test.ts',
  'test/approvals/browser.test.ts',
];

/** Files that need PostgreSQL's own mechanics (LISTEN/NOTIFY between instances): the SQLite run leaves them out rather than skipping them. */
const POSTGRES_ONLY = ['test/mcp/resources-instances.test.ts', 'test/limits/hung-postgres.test.ts'];

/**
 * Engine end-to-end files run once, on SQLite: they exercise engines, SSH and volumes, and the
 * store behaviour under them (job claims, leases, resuming after a crash) is what the two kept
 * here run on PostgreSQL too, with the whole API and MCP suite. This keeps both runs within the
 * suite's time budget.
 */
const E2E_ON_BOTH_STORES = new Set(['multi-instance.test.ts', 'migrate-kill.test.ts', 'jobs-outlive.test.ts']);
const E2E_SQLITE_ONLY = fs
  .readdirSync(new URL('./test/e2e/', import.meta.url))
  .filter((f) => f.endsWith('.test.ts') && !E2E_ON_BOTH_STORES.has(f))
  .map((f) => `test/e2e/${f}`);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each run also leaves out the other store's own mechanics (test/store/sqlite-*, postgres-*).
    exclude:
      process.env.BERTH_TEST_STORE === 'postgres'
        ? [...configDefaults.exclude, ...STORE_FREE, ...E2E_SQLITE_ONLY, 'test/store/sqlite-*.test.ts']
        : [...configDefaults.exclude, 'test/store/postgres-*.test.ts', ...POSTGRES_ONLY],
    // BERTH_TEST_STORE=postgres: a real PostgreSQL server for the run (test/helpers/store.ts).
    // One PostgreSQL server (BERTH_TEST_STORE=postgres) and one engine pair for the whole run.
    globalSetup: ['test/global-setup.ts', 'test/engines-global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here: more workers than that only adds contention.
    maxWorkers: 2,
    // A worker keeps the modules it loaded from one test file to the next: loading berth's modules
    // anew for every file cost a fifth of the suite's time. No test mocks modules or changes the
    // environment, and each file starts its own servers, engines and stores.
    isolate: false,
  },
});
