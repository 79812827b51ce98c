import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // BERTH_TEST_STORE=postgres: a real PostgreSQL server for the run (test/helpers/store.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here: more workers than that only adds contention.
    maxWorkers: 2,
  },
});
