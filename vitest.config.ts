import { configDefaults, defineConfig } from 'vitest/config'

// test/fixtures/must-fail holds tests that must fail (the test command's own check):
// outside the suite unless INTERLOCK_MUST_FAIL asks for them.
const mustFail = process.env.INTERLOCK_MUST_FAIL === '1'

export default defineConfig({
  test: {
    include: mustFail ? ['test/fixtures/must-fail/**/*.test.ts'] : ['test/**/*.test.ts'],
    exclude: mustFail ? configDefaults.exclude : [...configDefaults.exclude, 'test/fixtures/**'],
    setupFiles: ['test/helpers/record-children.ts'],
    globalSetup: ['test/helpers/leak-check.ts', 'test/helpers/global-setup.ts', 'test/helpers/build-once.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Crash tests spawn child processes and PostgreSQL is shared: keep the machine's two cores busy, not swamped.
    maxWorkers: 2,
  },
})
