import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that never open a store (engines, SSH, pure rules, the launcher, the MCP conformance
 * script's own instance): the PostgreSQL run leaves them to the SQLite run, where they already ran.
 */
const STORE_FREE = [
  'test/runtime/**',
  'test/ssh/**',
  'test/core/**',
  'test/auth/*.property.test.ts',
  'test/cli/launcher.test.ts',
  'test/mcp/conformance.test.ts',
  'test/limits/job-queues.test.ts',
  'test/remote/paced-gate.test.ts',
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each run also leaves out the other store's own mechanics (test/store/sqlite-*, postgres-*).
    exclude:
      process.env.BERTH_TEST_STORE === 'postgres'
        ? [...configDefaults.exclude, ...STORE_FREE, 'test/store/sqlite-*.test.ts']
        : [...configDefaults.exclude, 'test/store/postgres-*.test.ts'],
    // BERTH_TEST_STORE=postgres: a real PostgreSQL server for the run (test/helpers/store.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here: more workers than that only adds contention.
    maxWorkers: 2,
  },
});
