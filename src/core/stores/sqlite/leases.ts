/**
 * Relay leases and heartbeats on SQLite (schemas/sqlite/0001_baseline.sql): the
 * outbox on one machine. Each operation is one BEGIN IMMEDIATE transaction,
 * so claims from several relay processes on one file take turns on the write
 * lock and never take the same effect twice. Expiries are the store clock's
 * milliseconds since the epoch (one machine, one clock).
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Clock } from '../../clock.js'
import { STATES, type State } from '../../lifecycle.js'
import { settledCondition } from './open-effects.js'
import { READY_STATES, type ClaimedEffect, type ClaimRequest, type LeaseRef, type RelayHeartbeat } from '../store.js'
import type { SqliteDatabase } from './connection.js'
import { EFFECT_COLUMNS, type EffectRow } from './statements.js'

export type ToSnapshot = (row: EffectRow) => ClaimedEffect['snapshot']

export class SqliteLeases {
  private readonly takeTokens
  private readonly setLease
  private readonly extend
  private readonly drop
  private readonly beat
  private readonly listRelays
  private readonly dropRelays

  constructor(
    private readonly db: SqliteDatabase,
    private readonly clock: Clock,
    private readonly toSnapshot: ToSnapshot,
  ) {
    this.takeTokens = db.prepare(`UPDATE lease_tokens SET last = last + ? WHERE id = 1 RETURNING last`)
    this.setLease = db.prepare(`UPDATE effects SET lease_relay = ?, lease_token = ?, lease_expires = ? WHERE id = ?`)
    this.extend = db.prepare(`UPDATE effects SET lease_expires = ? WHERE id = ? AND lease_relay = ? AND lease_token = ?`)
    this.drop = db.prepare(
      `UPDATE effects SET lease_relay = NULL, lease_token = NULL, lease_expires = NULL WHERE id = ? AND lease_relay = ? AND lease_token = ?`,
    )
    this.beat = db.prepare(
      `INSERT INTO relays (relay, info, started_at, last_seen) VALUES (?, ?, ?, ?)
       ON CONFLICT (relay) DO UPDATE SET info = excluded.info, last_seen = excluded.last_seen`,
    )
    this.listRelays = db.prepare(`SELECT relay, info, started_at, last_seen FROM relays ORDER BY last_seen DESC, relay`)
    // ISO-8601 times in UTC compare as text.
    this.dropRelays = db.prepare(`DELETE FROM relays WHERE last_seen < ?`)
  }

  claim(req: ClaimRequest): ClaimedEffect[] {
    if (req.limit <= 0 || (req.targets && req.targets.length === 0) || (req.ids && req.ids.length === 0)) return []
    const states = (req.states ?? READY_STATES).filter((s: State) => (STATES as readonly string[]).includes(s))
    const byTarget = req.targets !== undefined
    const byId = req.ids !== undefined
    // Lets SQLite read the partial index of open effects (effects_open) in claim order.
    const settled = settledCondition(states)
    const select = this.db.prepare(
      `SELECT ${EFFECT_COLUMNS} FROM effects
       WHERE state IN (${states.map((s) => `'${s}'`).join(', ')})${settled ? ` AND ${settled}` : ''}${byTarget ? ' AND target IN (SELECT value FROM json_each(?))' : ''}${req.createdFrom !== undefined ? ' AND created_at >= ?' : ''}${byId ? ' AND id IN (SELECT value FROM json_each(?))' : ''}
         AND (lease_expires IS NULL OR lease_expires <= ?)
       ORDER BY created_at, id LIMIT ?`,
    )
    return this.db.transaction((): ClaimedEffect[] => {
      const now = this.clock.now().getTime()
      const params: unknown[] = [
        ...(byTarget ? [JSON.stringify(req.targets)] : []),
        ...(req.createdFrom !== undefined ? [req.createdFrom] : []),
        ...(byId ? [JSON.stringify(req.ids)] : []),
        now,
        req.limit,
      ]
      const rows = select.all(...params) as EffectRow[]
      if (rows.length === 0) return []
      const last = (this.takeTokens.get(rows.length) as { last: number }).last
      const expires = now + req.leaseMs
      return rows.map((row, i) => {
        const token = last - rows.length + 1 + i
        this.setLease.run(req.relay, token, expires, row.id)
        return { snapshot: this.toSnapshot(row), lease: { relay: req.relay, token }, expiresAt: new Date(expires).toISOString() }
      })
    }).immediate()
  }

  renew(relay: string, leases: readonly LeaseRef[], leaseMs: number): string[] {
    if (leases.length === 0) return []
    return this.db.transaction(() => {
      const expires = this.clock.now().getTime() + leaseMs
      return leases.filter((l) => this.extend.run(expires, l.effectId, relay, l.token).changes === 1).map((l) => l.effectId)
    }).immediate()
  }

  release(relay: string, leases: readonly LeaseRef[]): void {
    if (leases.length === 0) return
    this.db.transaction(() => {
      for (const l of leases) this.drop.run(l.effectId, relay, l.token)
    }).immediate()
  }

  heartbeat(relay: string, info: JsonObject): void {
    const at = this.clock.now().toISOString()
    this.beat.run(relay, JSON.stringify(info), at, at)
  }

  relays(): RelayHeartbeat[] {
    const now = this.clock.now().getTime()
    return (this.listRelays.all() as { relay: string; info: string; started_at: string; last_seen: string }[]).map((r) => ({
      relay: r.relay,
      info: JSON.parse(r.info) as JsonObject,
      startedAt: r.started_at,
      lastSeen: r.last_seen,
      ageMs: Math.max(0, now - Date.parse(r.last_seen)),
    }))
  }

  forget(olderThanMs: number): number {
    return this.dropRelays.run(new Date(this.clock.now().getTime() - olderThanMs).toISOString()).changes
  }
}
