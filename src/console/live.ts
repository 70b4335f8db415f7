/**
 * Live updates: server-sent events telling open pages that the outbox
 * changed, so they fetch themselves again without a reload.
 *
 * What "changed" means is a fingerprint of what the pages show: the counts
 * per state, every HELD and AMBIGUOUS effect with its last record (a release
 * that does not complete a quorum changes no count), and each relay's state.
 * Every page carries the fingerprint it was rendered at (its version), and
 * every event the current one, so a page that missed an event, or connected
 * after a change, still sees that it is behind.
 *
 * The store is asked when it says something happened (PostgreSQL
 * LISTEN/NOTIFY) and, as notifications only wake (a DISPATCHED record sends
 * none, a relay's heartbeat neither), on a timer too: every pollMs while at
 * least one page listens, never when none does.
 */
import type { ServerResponse } from 'node:http'
import { canonicalJson } from '../core/canonical-json.js'
import { sha256Hex } from '../core/hash.js'
import { relayState } from '../core/outbox/status.js'
import type { Store } from '../core/stores/store.js'

/** Waiting effects taken into the fingerprint; past this many, the counts tell the rest. */
const WAITING_SEEN = 500
/** A comment line now and then keeps proxies and idle timeouts from closing the stream. */
const KEEPALIVE_MS = 15_000

export class ChangeFeed {
  private readonly clients = new Set<ServerResponse>()
  private version: string | undefined
  private timer: NodeJS.Timeout | null = null
  private keepalive: NodeJS.Timeout | null = null
  private unsubscribe: Promise<(() => Promise<void>)[]> | null = null
  private checking: Promise<void> | null = null
  private again = false
  private closed = false

  constructor(
    private readonly store: Store,
    private readonly opts: { pollMs: number; log: (line: string) => void },
  ) {}

  /** The outbox's fingerprint now: what a page rendered now is the version of. */
  async current(): Promise<string> {
    const [counts, waiting, relays] = await Promise.all([
      this.store.countByState(),
      this.store.list({ states: ['HELD', 'AMBIGUOUS'], limit: WAITING_SEEN }),
      this.store.relays(),
    ])
    const shape = {
      counts,
      waiting: waiting.map((s) => `${s.effect.id}@${s.seq}`),
      relays: relays.map((r) => `${r.relay}:${relayState(r.info, r.ageMs)}`),
    }
    return sha256Hex(canonicalJson(shape as never)).slice(0, 16)
  }

  /** Streams to `res` until the page goes away; the first event is the version now. */
  async attach(res: ServerResponse): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive' })
    this.clients.add(res)
    res.on('close', () => {
      this.clients.delete(res)
      if (this.clients.size === 0) this.stop()
    })
    this.start()
    this.version = await this.current().catch(() => this.version)
    if (this.version) send(res, 'change', { version: this.version })
  }

  private start(): void {
    if (this.timer || this.closed) return
    this.timer = setInterval(() => this.check(), this.opts.pollMs)
    this.keepalive = setInterval(() => {
      for (const c of this.clients) c.write(': keepalive\n\n')
    }, KEEPALIVE_MS)
    if (this.store.subscribe && !this.unsubscribe) {
      const wake = () => this.check()
      this.unsubscribe = Promise.all([this.store.subscribe('ready', wake), this.store.subscribe('settled', wake)]).catch((e: unknown) => {
        this.opts.log(`live updates: store notifications unavailable (${(e as Error).message}); polling every ${this.opts.pollMs} ms`)
        return []
      })
    }
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer)
    if (this.keepalive) clearInterval(this.keepalive)
    this.timer = this.keepalive = null
    const unsubscribing = this.unsubscribe
    this.unsubscribe = null
    void unsubscribing?.then((offs) => Promise.all(offs.map((off) => off().catch(() => {}))))
  }

  /** One check at a time; a wake during one runs another after it. */
  private check(): void {
    if (this.checking) {
      this.again = true
      return
    }
    this.checking = (async () => {
      try {
        const now = await this.current()
        if (now !== this.version) {
          this.version = now
          for (const c of this.clients) send(c, 'change', { version: now })
        }
      } catch (e) {
        // The store is away for a moment (a PostgreSQL restart): the next tick asks again.
        this.opts.log(`live updates: could not read the outbox: ${(e as Error).message}`)
      } finally {
        this.checking = null
        if (this.again && !this.closed) {
          this.again = false
          this.check()
        }
      }
    })()
  }

  async close(): Promise<void> {
    this.closed = true
    this.stop()
    for (const c of this.clients) c.end()
    this.clients.clear()
    await this.checking
  }
}

function send(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
}
