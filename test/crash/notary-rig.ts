/**
 * What the notarized schedules run against: a journal (SQLite on tmpfs by
 * default), a notary (its log behind its HTTP API; SQLite by default) that
 * can be taken down and restarted on the same port from the same store, and
 * the demo's HTTP service behind the notary's middleware. The notary counts
 * the records it wrote, so a schedule can take it down right after its k-th.
 * The journal and the notary's store are parameters (notaryRig's options).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { StoreConfig } from '../../src/core/config/types.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import type { NotaryStore } from '../../src/core/notary/store.js'
import { notaryMiddleware } from '../../src/core/notary/middleware.js'
import { startNotaryServer, type NotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'

export const AGENT = generateKeyPair('relay', 'agent-1')
export const SERVICE = generateKeyPair('relay', 'svc')
export const TRUSTED = { agents: { 'agent-1': AGENT.publicKey }, services: { svc: SERVICE.publicKey } }

/** Opens the notary's store, each time the notary (re)starts: the same data every time. */
export type OpenNotaryStore = () => NotaryStore | Promise<NotaryStore>

/** The notary as a process: up or down, restarted from its store on the same port. */
export class NotaryHost {
  private server?: NotaryServer
  private current?: NotaryLog
  private port = 0
  private writes = 0
  private downAfter?: number
  /** Every transition (down, up) in order; await it to know where the notary stands. */
  private transitions: Promise<void> = Promise.resolve()
  url = ''

  constructor(private readonly open: OpenNotaryStore) {}

  get up(): boolean {
    return this.server !== undefined
  }

  /** The log as the notary's operator sees it (the notary must be up). */
  log(): NotaryLog {
    if (!this.current) throw new Error('the notary is down')
    return this.current
  }

  async start(): Promise<void> {
    const inner = notaryLog(await this.open(), TRUSTED)
    this.current = inner
    const counted: NotaryLog = {
      ...inner,
      write: async (record) => {
        const answer = await inner.write(record)
        if (answer.status === 'written' && ++this.writes === this.downAfter) this.crash()
        return answer
      },
    }
    this.server = await startNotaryServer(counted, { port: this.port })
    this.port = this.server.port
    this.url = this.server.url
  }

  /** Goes down right after the k-th record written from now on (its answer never leaves). */
  downAfterWrites(k: number | undefined, restartMidRun = false): void {
    this.writes = 0
    this.downAfter = k
    this.restartMidRun = restartMidRun
  }
  private restartMidRun = false

  /** Stops now: open connections are cut, so the answer being written is lost. */
  crash(): void {
    this.transitions = this.transitions.then(async () => {
      if (!this.server) return
      const server = this.server
      const log = this.current
      this.server = undefined
      this.current = undefined
      await server.close()
      await log?.close()
      if (this.restartMidRun) {
        await new Promise((r) => setTimeout(r, 2))
        await this.start()
      }
    })
  }

  async settled(): Promise<void> {
    await this.transitions
  }

  async restart(): Promise<void> {
    await this.settled()
    this.downAfter = undefined
    if (!this.server) await this.start()
  }

  async close(): Promise<void> {
    await this.settled()
    this.downAfter = undefined
    await this.server?.close()
    await this.current?.close()
    this.server = undefined
    this.current = undefined
  }
}

export interface NotaryRig {
  config: StoreConfig
  store: Store
  notary: NotaryHost
  service: HttpService
  close(): Promise<void>
}

export interface NotaryRigOptions {
  /** The journal (default: SQLite in the rig's folder). */
  journal?: StoreConfig
  /** The notary's store (default: SQLite in the rig's folder). */
  notaryStore?: OpenNotaryStore
}

export async function notaryRig(options: NotaryRigOptions = {}): Promise<NotaryRig> {
  const base = process.env.INTERLOCK_CRASH_DIR ?? (process.platform === 'linux' ? '/dev/shm' : tmpdir())
  const dir = mkdtempSync(join(base, 'interlock-notary-crash-'))
  const config: StoreConfig = options.journal ?? { kind: 'sqlite', path: join(dir, 'journal.db') }
  const store = await openStore(config, { autoInstall: true })
  const notary = new NotaryHost(options.notaryStore ?? (() => openSqliteNotaryStore(join(dir, 'notary.db'))))
  await notary.start()
  const service = await startHttpService({ around: notaryMiddleware({ notary: notary.url, service: 'svc', key: SERVICE, timeoutMs: 2000 }) })
  return {
    config,
    store,
    notary,
    service,
    close: async () => {
      await service.close()
      await notary.close()
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
