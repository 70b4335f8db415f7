import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts', 'test/helpers/build-once.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Crash tests spawn child processes and PostgreSQL is shared: keep the machine's two cores busy, not swamped.
    maxWorkers: 2,
  },
})
