/**
 * LISTEN/NOTIFY for the outbox: appends announce, at COMMIT, that effects
 * became ready (a relay may claim them) or settled (a waiting submitter may
 * read its outcome). The payload is the store's schema, so stores in several
 * schemas of one database do not wake each other.
 *
 * Notifications only wake; they carry nothing a reader relies on. A missed
 * one (listener reconnecting, server restarted) costs a poll interval, never
 * correctness: every listener also polls.
 */
import type pg from 'pg'
import type { State } from '../../lifecycle.js'
import type { StoreEvent } from '../store.js'
import { newClient } from './connect.js'

const CHANNELS: Record<StoreEvent, string> = { ready: 'interlock_ready', settled: 'interlock_settled' }

/** Which channels a batch of new records wakes. */
export function notifyChannels(states: readonly State[]): string[] {
  const out: string[] = []
  if (states.some((s) => s === 'PROPOSED' || s === 'AUTHORIZED')) out.push(CHANNELS.ready)
  if (states.some((s) => s !== 'PROPOSED' && s !== 'AUTHORIZED' && s !== 'DISPATCHED')) out.push(CHANNELS.settled)
  return out
}

type Listener = () => void

/**
 * One LISTEN connection per store, opened on first subscribe and reopened
 * (with back-off) whenever it drops, e.g. across a PostgreSQL restart.
 */
export class NotificationListener {
  private client: pg.Client | null = null
  private connecting: Promise<void> | null = null
  private readonly listeners = new Map<StoreEvent, Set<Listener>>()
  private closed = false
  private retryMs = 100
  private retryTimer: NodeJS.Timeout | null = null

  constructor(
    private readonly url: string,
    private readonly schema: string,
  ) {}

  async subscribe(event: StoreEvent, listener: Listener): Promise<() => Promise<void>> {
    let set = this.listeners.get(event)
    if (!set) this.listeners.set(event, (set = new Set()))
    set.add(listener)
    await this.ensure().catch(() => this.scheduleReconnect())
    return async () => {
      set.delete(listener)
    }
  }

  private ensure(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve()
    this.connecting ??= this.connect().finally(() => (this.connecting = null))
    return this.connecting
  }

  private async connect(): Promise<void> {
    const client = newClient(this.url, { application_name: 'interlock listen', connectionTimeoutMillis: 5_000 })
    const lost = () => {
      if (this.client === client) this.client = null
      client.end().catch(() => {})
      this.scheduleReconnect()
    }
    client.on('error', lost)
    client.on('end', lost)
    client.on('notification', (n) => {
      if (n.payload !== this.schema) return
      const event = (Object.keys(CHANNELS) as StoreEvent[]).find((e) => CHANNELS[e] === n.channel)
      for (const l of (event && this.listeners.get(event)) ?? []) l()
    })
    await client.connect()
    await client.query(`LISTEN ${CHANNELS.ready}; LISTEN ${CHANNELS.settled}`)
    if (this.closed) {
      await client.end().catch(() => {})
      return
    }
    this.client = client
    this.retryMs = 100
    // Whatever happened while we were not listening: wake everyone once.
    for (const set of this.listeners.values()) for (const l of set) l()
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      this.ensure().catch(() => this.scheduleReconnect())
    }, this.retryMs)
    this.retryTimer.unref()
    this.retryMs = Math.min(this.retryMs * 2, 5_000)
  }

  async close(): Promise<void> {
    this.closed = true
    if (this.retryTimer) clearTimeout(this.retryTimer)
    const c = this.client
    this.client = null
    await c?.end().catch(() => {})
  }
}
