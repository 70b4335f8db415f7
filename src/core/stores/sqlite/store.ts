/**
 * The SQLite store (better-sqlite3): the embedded default.
 *
 * Appends run in BEGIN IMMEDIATE transactions: the write lock is taken first,
 * then the journal heads and effect states are read, so processes sharing the
 * file extend each chain one after another (the compare-and-set and the chain
 * are decided on what is committed, never on a stale read). The driver is
 * synchronous; the group-commit decorator (group-commit.ts) is what gathers
 * concurrent callers into one transaction. The transaction body is append.ts.
 */
import type { Transaction } from 'better-sqlite3'
import { systemClock, type Clock } from '../../clock.js'
import type { EffectSnapshot, Tier } from '../../effect.js'
import { StoreError } from '../../errors.js'
import { STATES, isTerminal, type State } from '../../lifecycle.js'
import { validateAppendRequests } from '../append-plan.js'
import { verifyHistory } from '../history-check.js'
import { parseEffectColumn, parseRecordData } from '../record-data.js'
import { recordPages } from '../record-pages.js'
import { checkInFlight, type InFlightRow, type JournalEnd, type ProjectedEffect } from '../in-flight-check.js'
import {
  GENESIS_HASH,
  type AppendRequest,
  type AppendResult,
  type ClaimedEffect,
  type ClaimRequest,
  type InFlightScan,
  type JournalRecord,
  type LeaseRef,
  type ListFilter,
  type PruneRequest,
  type PruneResult,
  type ReadScope,
  type RelayHeartbeat,
  type Store,
  type StoredCheckpoint,
} from '../store.js'
import type { JsonObject } from '../../canonical-json.js'
import { appendInTransaction } from './append.js'
import type { StoredSeal } from '../../crypto/seal.js'
import { SqliteLeases } from './leases.js'
import { pruneSqlite } from './prune.js'
import { settledCondition } from './open-effects.js'
import type { SqliteDatabase } from './connection.js'
import { sqliteError } from './errors.js'
import { EFFECT_COLUMNS, prepareStatements, type EffectRow, type EndRow, type InFlightRecordRow, type RecordRow, type Statements } from './statements.js'

export interface SqliteStoreOptions {
  clock?: Clock
  /** Records per page when iterating records(). */
  pageSize?: number
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const
  private readonly clock: Clock
  private readonly pageSize: number
  private readonly q: Statements
  private readonly leases: SqliteLeases
  private readonly appendTx: Transaction<(requests: AppendRequest[], at: string) => AppendResult[]>
  private closed = false

  constructor(
    private readonly db: SqliteDatabase,
    private readonly file: string,
    options: SqliteStoreOptions = {},
  ) {
    this.clock = options.clock ?? systemClock
    this.pageSize = options.pageSize ?? 2000
    this.q = prepareStatements(db)
    this.leases = new SqliteLeases(db, this.clock, toSnapshot)
    this.appendTx = db.transaction((requests: AppendRequest[], at: string) => appendInTransaction(this.q, toSnapshot, requests, at))
  }

  async append(requests: AppendRequest[]): Promise<AppendResult[]> {
    this.assertOpen()
    validateAppendRequests(requests)
    if (requests.length === 0) return []
    const at = this.clock.now().toISOString()
    try {
      return this.appendTx.immediate(requests, at)
    } catch (e) {
      throw sqliteError(e, 'an append', this.file)
    }
  }

  async get(effectId: string): Promise<EffectSnapshot | undefined> {
    this.assertOpen()
    const row = this.read('a lookup', () => this.q.effect.get(effectId) as EffectRow | undefined)
    return row && toSnapshot(row)
  }

  async history(effectId: string): Promise<JournalRecord[]> {
    this.assertOpen()
    const { rows, effect } = this.read('reading a history', () =>
      this.db.transaction(() => ({
        rows: this.q.history.all(effectId, effectId) as (Record<string, string | number> & { predecessor: string | null })[],
        effect: this.q.effect.get(effectId) as EffectRow | undefined,
      }))(),
    )
    return verifyHistory(
      effectId,
      rows.map((r) => ({
        record: toRecord([r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash] as RecordRow),
        dataText: r.data as string,
        predecessorHash: r.predecessor,
      })),
      effect && { journal: effect.journal, seq: effect.last_seq },
    )
  }

  async scanInFlight(): Promise<InFlightScan> {
    this.assertOpen()
    // One read transaction: a consistent snapshot of projection, records and heads while other processes write.
    return this.read('the in-flight scan', () =>
      this.db.transaction((): InFlightScan => {
        const projection = (this.q.inFlight.all() as { id: string; journal: string; state: string; last_seq: number }[]).map(
          (r): ProjectedEffect => ({ id: r.id, journal: r.journal, state: r.state, seq: r.last_seq }),
        )
        if (projection.length === 0) return { effects: [], recordsRead: 0 }
        const rows: InFlightRow[] = []
        for (const p of projection) {
          for (const r of this.q.inFlightRecords.all(p.id, p.id) as InFlightRecordRow[]) {
            rows.push({ journal: r[0], seq: r[1], effectId: r[2], state: r[3], at: r[4], dataText: r[5], prevHash: r[6], hash: r[7], predecessor: r[8], successor: r[9] })
          }
        }
        const ends = new Map<string, JournalEnd>()
        for (const journal of new Set(projection.map((p) => p.journal))) {
          const e = this.q.journalEnd.get(journal, journal, journal, journal) as EndRow
          ends.set(journal, {
            journal,
            head: e.head_seq === null ? { seq: 0, hash: GENESIS_HASH } : { seq: e.head_seq, hash: e.head_hash! },
            atHead: e.at_head,
            beyond: e.beyond,
          })
        }
        return { ...checkInFlight(projection, rows, ends), recordsRead: rows.length }
      })(),
    )
  }

  async list(filter: ListFilter = {}): Promise<EffectSnapshot[]> {
    this.assertOpen()
    const where: string[] = []
    const params: unknown[] = []
    if (filter.states?.length) {
      where.push(`state IN (SELECT value FROM json_each(?))`)
      params.push(JSON.stringify(filter.states))
      const settled = settledCondition(filter.states)
      if (settled) where.push(settled)
    }
    if (filter.target !== undefined) {
      where.push('target = ?')
      params.push(filter.target)
    }
    if (filter.thread !== undefined) {
      // An effect's thread is its journal: the journal's records (keyed by journal) name its effects
      // without an index of the effects by thread, which every proposal would have to write.
      where.push('id IN (SELECT effect_id FROM journal_records WHERE journal = ?)')
      params.push(filter.thread)
    }
    // Fields of the effect's JSON, read from the rows the other conditions leave (a thread's, for the gateway's key check).
    if (filter.principal !== undefined) {
      where.push(`json_extract(effect, '$.principal') = ?`)
      params.push(filter.principal)
    }
    if (filter.key !== undefined) {
      where.push(`json_extract(effect, '$.key') = ?`)
      params.push(filter.key)
    }
    if (filter.idPrefix !== undefined) {
      // A range on the primary key ("g" follows every hex digit): the index answers it.
      where.push('id >= ? AND id < ?')
      params.push(filter.idPrefix, `${filter.idPrefix}g`)
    }
    // created_at is ISO-8601 UTC text from the clock: text order is time order.
    if (filter.since !== undefined) {
      where.push('created_at >= ?')
      params.push(filter.since)
    }
    if (filter.until !== undefined) {
      where.push('created_at < ?')
      params.push(filter.until)
    }
    const sql =
      `SELECT ${EFFECT_COLUMNS} FROM effects${where.length ? ` WHERE ${where.join(' AND ')}` : ''}` +
      ` ORDER BY created_at DESC, rowid DESC` +
      // SQLite needs a LIMIT before an OFFSET; -1 is "no limit".
      (filter.limit !== undefined || filter.offset !== undefined ? ' LIMIT ?' : '') +
      (filter.offset !== undefined ? ' OFFSET ?' : '')
    if (filter.limit !== undefined || filter.offset !== undefined) params.push(filter.limit ?? -1)
    if (filter.offset !== undefined) params.push(filter.offset)
    const rows = this.read('listing effects', () => this.db.prepare(sql).all(...params) as EffectRow[])
    return rows.map(toSnapshot)
  }

  async countByState(states: readonly State[] = STATES): Promise<Record<State, number>> {
    this.assertOpen()
    // Two indexed passes (schemas/sqlite/0001_baseline.sql): settled effects over effects_settled, which
    // covers their state; open ones, usually few, through effects_open and their rows. Only open states
    // asked for: the second alone.
    const settled = states.some((s) => isTerminal(s))
    const rows = this.read('counting effects', () => [...(settled ? this.q.countSettled.all() : []), ...this.q.countOpen.all()] as { state: string; n: number }[])
    const counts = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<State, number>
    for (const r of rows) if (states.includes(r.state as State)) counts[r.state as State] += r.n
    return counts
  }

  async *records(after?: ReadonlyMap<string, number>): AsyncIterable<JournalRecord> {
    this.assertOpen()
    yield* recordPages((journal, seq, limit) => this.read('reading records', () => this.q.recordsPage.all(journal, seq, limit) as RecordRow[]), toRecord, this.pageSize, after)
  }

  async claim(request: ClaimRequest): Promise<ClaimedEffect[]> {
    this.assertOpen()
    return this.write('claiming effects', () => this.leases.claim(request))
  }

  async renewLease(relay: string, leases: readonly LeaseRef[], leaseMs: number): Promise<string[]> {
    this.assertOpen()
    return this.write('renewing leases', () => this.leases.renew(relay, leases, leaseMs))
  }

  async releaseLease(relay: string, leases: readonly LeaseRef[]): Promise<void> {
    this.assertOpen()
    this.write('releasing leases', () => this.leases.release(relay, leases))
  }

  async heartbeat(relay: string, info: JsonObject): Promise<void> {
    this.assertOpen()
    this.write('a relay heartbeat', () => this.leases.heartbeat(relay, info))
  }

  async relays(): Promise<RelayHeartbeat[]> {
    this.assertOpen()
    return this.read('listing relays', () => this.leases.relays())
  }

  async checkpoints(): Promise<StoredCheckpoint[]> {
    this.assertOpen()
    const rows = this.read('reading checkpoints', () => this.q.checkpoints.all() as { digest: string; made_at: string; document: string }[])
    return rows.map((r) => ({ digest: r.digest, madeAt: r.made_at, document: JSON.parse(r.document) as JsonObject }))
  }

  async seals(at?: readonly string[]): Promise<StoredSeal[]> {
    this.assertOpen()
    const rows = this.read('reading seals', () =>
      at === undefined
        ? (this.q.seals.all() as { seal: string }[])
        : at.length === 0
          ? []
          : (this.db.prepare(`SELECT seal FROM seals WHERE at IN (${at.map(() => '?').join(', ')}) ORDER BY id`).all(...at) as { seal: string }[]),
    )
    return rows.map((r) => JSON.parse(r.seal) as StoredSeal)
  }

  async prune(request: PruneRequest): Promise<PruneResult> {
    this.assertOpen()
    return this.write('pruning', () => pruneSqlite(this.db, request, this.file))
  }

  async forgetRelays(olderThanMs: number): Promise<number> {
    this.assertOpen()
    return this.write('forgetting relays', () => this.leases.forget(olderThanMs))
  }

  async rememberRead(scope: ReadScope, read: string, digest: string): Promise<void> {
    this.assertOpen()
    this.write('keeping a read', () => this.q.rememberRead.run(scope.principal, scope.thread, scope.target, read, digest, this.clock.now().toISOString()))
  }

  async recallRead(scope: ReadScope, read: string): Promise<string | undefined> {
    this.assertOpen()
    return this.read('recalling a read', () => this.q.recallRead.get(scope.principal, scope.thread, scope.target, read) as string | undefined)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.db.close()
  }

  private write<T>(what: string, fn: () => T): T {
    try {
      return fn()
    } catch (e) {
      throw sqliteError(e, what, this.file)
    }
  }

  private read<T>(what: string, fn: () => T): T {
    try {
      return fn()
    } catch (e) {
      throw sqliteError(e, what, this.file)
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreError(`the SQLite journal ${this.file} is closed`)
  }
}

function toSnapshot(row: EffectRow): EffectSnapshot {
  return {
    effect: parseEffectColumn(row.id, 'effect', row.effect) as unknown as EffectSnapshot['effect'],
    tier: row.tier as Tier,
    state: row.state as State,
    seq: row.last_seq,
    detail: parseEffectColumn(row.id, 'detail', row.detail),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

function toRecord(r: RecordRow): JournalRecord {
  return {
    journal: r[0],
    seq: r[1],
    effectId: r[2],
    state: r[3] as State,
    at: r[4],
    data: parseRecordData(r[0], r[1], r[5]),
    prevHash: r[6],
    hash: r[7],
  }
}
