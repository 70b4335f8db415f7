/**
 * Relay leases and heartbeats on PostgreSQL (schemas/postgres/0001_baseline.sql;
 * the claim of ready effects is its claim() function).
 *
 * claim: one statement. It picks rows whose lease is free or expired, oldest
 * first, FOR UPDATE SKIP LOCKED: relays claiming at once
 * each take different rows without waiting on each other, and rows an append
 * holds (it locks the effects it writes) are skipped, not waited for. Every
 * claimed row gets a fresh token from the lease_tokens sequence and an expiry
 * in database time, so relays on hosts with skewed clocks still agree.
 *
 * renew and release lock their rows in id order, the order appends lock
 * theirs, so the two never deadlock.
 */
import type pg from 'pg'
import type { JsonObject } from '../../canonical-json.js'
import type { State } from '../../lifecycle.js'
import { READY_STATES, type ClaimedEffect, type ClaimRequest, type LeaseRef, type RelayHeartbeat } from '../store.js'
import { toSnapshot, type EffectRow } from './rows.js'
import { quoteSchema } from './identifier.js'
import { stateList } from './statements.js'

type Query = <R extends pg.QueryResultRow>(what: string, text: string, values: unknown[]) => Promise<pg.QueryResult<R>>

const COLUMNS = 'e.id, e.journal, e.effect, e.tier, e.state, e.last_seq, e.detail, e.created_at, e.updated_at'

export function leaseStatements(schema: string) {
  const s = quoteSchema(schema)
  return {
    // Ready states (a relay's claims): the claim() function of schemas/postgres/0001_baseline.sql.
    claimReady: `SELECT id, journal, effect, tier, state, last_seq, detail, created_at, updated_at, lease_token, lease_expires
      FROM ${s}.claim($1, $2, $3, $4::text[], $5::timestamptz, $6::text[])`,
    // Any other state (reconcile takes HELD effects too): no index of ready work applies. Or named
    // effects (reconcile leases just those it will act on): each found by its primary key.
    claimOther: (states: readonly State[], byTarget: boolean, from: boolean, byId = false) => `WITH ready AS (
        SELECT id FROM ${s}.effects
        WHERE state IN (${stateList(states)})${byTarget ? ' AND target = ANY($4::text[])' : ''}${from ? ` AND created_at >= $${byTarget ? 5 : 4}::timestamptz` : ''}${byId ? ` AND id = ANY($${4 + (byTarget ? 1 : 0) + (from ? 1 : 0)}::text[])` : ''}
          AND (lease_expires IS NULL OR lease_expires < clock_timestamp())
        ${byId ? '' : 'ORDER BY created_at, id'}
        LIMIT $2
        FOR UPDATE SKIP LOCKED
      )
      UPDATE ${s}.effects e
      SET lease_relay = $1, lease_token = nextval('${s}.lease_tokens'), lease_expires = clock_timestamp() + $3 * interval '1 millisecond'
      FROM ready WHERE e.id = ready.id
      RETURNING ${COLUMNS}, e.lease_token, e.lease_expires`,
    renew: `UPDATE ${s}.effects e SET lease_expires = clock_timestamp() + $4 * interval '1 millisecond'
      FROM (SELECT x.id, u.token FROM ${s}.effects x JOIN unnest($2::text[], $3::bigint[]) AS u(id, token) ON x.id = u.id
            WHERE x.lease_relay = $1 AND x.lease_token = u.token ORDER BY x.id FOR UPDATE OF x) AS held
      WHERE e.id = held.id
      RETURNING e.id`,
    release: `UPDATE ${s}.effects e SET lease_relay = NULL, lease_token = NULL, lease_expires = NULL
      FROM (SELECT x.id FROM ${s}.effects x JOIN unnest($2::text[], $3::bigint[]) AS u(id, token) ON x.id = u.id
            WHERE x.lease_relay = $1 AND x.lease_token = u.token ORDER BY x.id FOR UPDATE OF x) AS held
      WHERE e.id = held.id`,
    heartbeat: `INSERT INTO ${s}.relays (relay, info, started_at, last_seen) VALUES ($1, $2::json, clock_timestamp(), clock_timestamp())
      ON CONFLICT (relay) DO UPDATE SET info = excluded.info, last_seen = excluded.last_seen`,
    relays: `SELECT relay, info, started_at, last_seen, floor(extract(epoch FROM clock_timestamp() - last_seen) * 1000) AS age_ms
      FROM ${s}.relays ORDER BY last_seen DESC, relay`,
    forgetRelays: `DELETE FROM ${s}.relays WHERE last_seen < clock_timestamp() - $1 * interval '1 millisecond'`,
  }
}

export type LeaseStatements = ReturnType<typeof leaseStatements>

export async function claim(query: Query, sql: LeaseStatements, req: ClaimRequest): Promise<ClaimedEffect[]> {
  if (req.limit <= 0 || (req.targets && req.targets.length === 0) || (req.ids && req.ids.length === 0)) return []
  const states = req.states ?? READY_STATES
  const byTarget = req.targets !== undefined
  let text: string
  let values: unknown[]
  if (states.every((st) => READY_STATES.includes(st)) && req.ids === undefined) {
    text = sql.claimReady
    values = [req.relay, req.limit, req.leaseMs, req.targets ?? null, req.createdFrom ?? null, states]
  } else {
    text = sql.claimOther(states, byTarget, req.createdFrom !== undefined, req.ids !== undefined)
    values = [req.relay, req.limit, req.leaseMs]
    if (byTarget) values.push(req.targets)
    if (req.createdFrom !== undefined) values.push(req.createdFrom)
    if (req.ids !== undefined) values.push(req.ids)
  }
  const { rows } = await query<EffectRow & { lease_token: string; lease_expires: Date }>('claiming effects', text, values)
  return rows
    .map((r) => ({ snapshot: toSnapshot(r), lease: { relay: req.relay, token: Number(r.lease_token) }, expiresAt: r.lease_expires.toISOString() }))
    .sort((a, b) => a.snapshot.createdAt.localeCompare(b.snapshot.createdAt) || a.snapshot.effect.id.localeCompare(b.snapshot.effect.id))
}

export async function renewLease(query: Query, sql: LeaseStatements, relay: string, leases: readonly LeaseRef[], leaseMs: number): Promise<string[]> {
  if (leases.length === 0) return []
  const { rows } = await query<{ id: string }>('renewing leases', sql.renew, [relay, leases.map((l) => l.effectId), leases.map((l) => l.token), leaseMs])
  return rows.map((r) => r.id)
}

export async function releaseLease(query: Query, sql: LeaseStatements, relay: string, leases: readonly LeaseRef[]): Promise<void> {
  if (leases.length === 0) return
  await query('releasing leases', sql.release, [relay, leases.map((l) => l.effectId), leases.map((l) => l.token)])
}

export async function heartbeat(query: Query, sql: LeaseStatements, relay: string, info: JsonObject): Promise<void> {
  await query('a relay heartbeat', sql.heartbeat, [relay, JSON.stringify(info)])
}

export async function relays(query: Query, sql: LeaseStatements): Promise<RelayHeartbeat[]> {
  const { rows } = await query<{ relay: string; info: JsonObject; started_at: Date; last_seen: Date; age_ms: string }>('listing relays', sql.relays, [])
  return rows.map((r) => ({
    relay: r.relay,
    info: r.info,
    startedAt: r.started_at.toISOString(),
    lastSeen: r.last_seen.toISOString(),
    ageMs: Math.max(0, Number(r.age_ms)),
  }))
}

export async function forgetRelays(query: Query, sql: LeaseStatements, olderThanMs: number): Promise<number> {
  const { rowCount } = await query('forgetting relays', sql.forgetRelays, [olderThanMs])
  return rowCount ?? 0
}
