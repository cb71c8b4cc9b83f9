import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/globalSetup.ts'],
    // Real servers on 2 cores take seconds, not ms, and a busy machine several times longer: tests
    // wait on states, so a timeout only stops a hang (speed is measured by `npm run bench`).
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/summaryReporter.ts'],
  },
});
