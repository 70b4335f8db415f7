/**
 * The PostgreSQL store (`pg` Pool): the shared journal for an outbox drained
 * by several relays. Each append batch is one transaction, one call (appendBatch);
 * reads that must agree with each other run in one REPEATABLE READ snapshot.
 *
 * Failure handling (docs/design.md: nothing is dispatched before DISPATCHED is
 * durable): a connection that fails, or a COMMIT whose answer never came,
 * rejects with StoreUnavailableError; the gate then dispatches nothing.
 */
import type pg from 'pg'
import { systemClock, type Clock } from '../../clock.js'
import type { EffectSnapshot } from '../../effect.js'
import { StoreError } from '../../errors.js'
import { STATES, type State } from '../../lifecycle.js'
import { validateAppendRequests } from '../append-plan.js'
import { verifyHistory } from '../history-check.js'
import { recordPages } from '../record-pages.js'
import { checkInFlight, type JournalEnd } from '../in-flight-check.js'
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
  type StoreEvent,
  type StoredCheckpoint,
} from '../store.js'
import type { JsonObject } from '../../canonical-json.js'
import { claim, forgetRelays, heartbeat, leaseStatements, relays, releaseLease, renewLease, type LeaseStatements } from './leases.js'
import { NotificationListener } from './notify.js'
import { appendBatch, committedChannels, notifyCommitted } from './append.js'
import type { StoredSeal } from '../../crypto/seal.js'
import { sealsOf } from '../seals.js'
import { HistoryBatcher, type JoinedRecordRow } from './history-batch.js'
import { isTransientPgError, pgError } from './errors.js'
import { assertProposals, proposeBatch } from './propose.js'
import { prunePostgres } from './prune.js'
import { toHistoryRow, toInFlightRow, toRecord, toSnapshot, type EffectRow, type HistoryRecordRow, type InFlightRecordRow, type RecordRow } from './rows.js'
import { stateList, statements, type PgAccess, type PgStatements } from './statements.js'

export interface PostgresStoreOptions {
  clock?: Clock
  /** Records per round trip when reading journals. */
  pageSize?: number
  /** How the store names its database in messages (no credentials). */
  where?: string
  /** Connection string for the LISTEN connection; without it the store cannot notify (callers poll). */
  url?: string
  /**
   * "agent": the database role may only propose and read its own effects
   * (schemas/postgres/0001_baseline.sql): appends take proposals only,
   * reads see only this role's effects, and what relays and operators do
   * (claims, leases, heartbeats, whole-journal reads) is refused. Default "full".
   */
  access?: PgAccess
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const
  private readonly sql: PgStatements
  private readonly clock: Clock
  private readonly pageSize: number
  private readonly where: string
  private readonly leases: LeaseStatements
  private readonly listener: NotificationListener | null
  private readonly access: PgAccess
  private readonly histories: HistoryBatcher
  private closed = false

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
    options: PostgresStoreOptions = {},
  ) {
    this.access = options.access ?? 'full'
    this.sql = statements(schema, this.access)
    this.clock = options.clock ?? systemClock
    this.pageSize = options.pageSize ?? 10_000
    this.where = options.where ?? `PostgreSQL schema "${schema}"`
    this.leases = leaseStatements(schema)
    this.listener = options.url ? new NotificationListener(options.url, schema) : null
    if (!this.listener) this.subscribe = undefined
    this.histories = new HistoryBatcher(
      async (ids) => (await this.query<JoinedRecordRow>('reading histories', this.sql.histories, [ids])).rows,
      (id) => this.historyAlone(id),
    )
    if (this.access !== 'agent') this.checkAppend = undefined
  }

  checkAppend?(requests: readonly AppendRequest[]): void {
    assertProposals(requests, this.where)
  }

  async append(requests: AppendRequest[]): Promise<AppendResult[]> {
    this.assertOpen()
    validateAppendRequests(requests)
    this.checkAppend?.(requests)
    if (requests.length === 0) return []
    const at = this.clock.now().toISOString()
    const client = await this.connect('an append')
    try {
      // One autocommit statement: no BEGIN/COMMIT round trips (schemas/postgres/0001_baseline.sql, append()).
      if (this.access === 'agent') {
        const proposed = await proposeBatch(client, this.sql, requests)
        client.release()
        return proposed
      }
      // A batch of several effects (a group commit's: relays, outboxes under load) notifies after its commit, in a
      // statement of its own which the caller does not wait for; one effect's append, at its commit (append.ts).
      const oneEffect = requests.every((r) => r.effectId === requests[0]!.effectId)
      const results = requests.some((r) => r.sealer)
        ? await this.sealedAppend(client, requests, at, oneEffect)
        : await appendBatch(client, this.sql, requests, at, this.schema, oneEffect)
      const channels = oneEffect ? [] : committedChannels(requests, results)
      if (channels.length === 0) client.release()
      else void notifyCommitted(client, channels, this.schema).then(() => client.release(), (e: unknown) => client.release(asError(e)))
      return results
    } catch (e) {
      // An error the server answered (it has a SQLSTATE) rolled the statement back; any other
      // failure came after the statement was sent, so whether it committed is unknown, and
      // the connection is not reused.
      const answered = hasSqlState(e)
      client.release(answered && !isTransientPgError(e) ? undefined : asError(e))
      throw pgError(e, 'an append', this.where, !answered)
    }
  }

  /**
   * An append whose writer seals (crypto/seal.ts): the append function and
   * the seals over what it wrote in one transaction, two round trips more
   * than the autocommit statement and the same one flush. A failure rolls
   * back before the connection goes back to the pool; a connection that
   * cannot roll back is not reused.
   */
  private async sealedAppend(client: pg.PoolClient, requests: AppendRequest[], at: string, oneEffect: boolean): Promise<AppendResult[]> {
    await client.query('BEGIN')
    try {
      const results = await appendBatch(client, this.sql, requests, at, this.schema, oneEffect)
      const seals = sealsOf(requests, results)
      if (seals.length > 0) {
        await client.query({ name: 'interlock_insert_seals', text: this.sql.insertSeals, values: [seals.map((x) => x.statement.at), seals.map((x) => JSON.stringify(x))] })
      }
      await client.query('COMMIT')
      return results
    } catch (e) {
      // Answered by the server (a SQLSTATE): the transaction is open and aborted; anything else left its fate unknown.
      if (hasSqlState(e)) await client.query('ROLLBACK').catch(() => {})
      throw e
    }
  }

  async seals(at?: readonly string[]): Promise<StoredSeal[]> {
    this.assertOpen()
    this.assertFull('reading seals')
    if (at !== undefined && at.length === 0) return []
    const { rows } = at === undefined ? await this.query<{ seal: string }>('reading seals', this.sql.seals, []) : await this.query<{ seal: string }>('reading seals', this.sql.sealsAt, [at])
    return rows.map((r) => JSON.parse(r.seal) as StoredSeal)
  }

  async get(effectId: string): Promise<EffectSnapshot | undefined> {
    this.assertOpen()
    const { rows } = await this.query<EffectRow>('a lookup', this.sql.effect, [effectId])
    return rows[0] && toSnapshot(rows[0])
  }

  async history(effectId: string): Promise<JournalRecord[]> {
    this.assertOpen()
    // Agent access reads its own records through a view, one effect at a time (an agent reads few).
    return this.access === 'agent' ? this.historyAlone(effectId) : this.histories.history(effectId)
  }

  private async historyAlone(effectId: string): Promise<JournalRecord[]> {
    const { rows, effect } = await this.snapshot('reading a history', async (client) => ({
      rows: (await client.query<HistoryRecordRow>(this.sql.history, [effectId])).rows,
      effect: (await client.query<EffectRow>(this.sql.effect, [effectId])).rows[0],
    }))
    return verifyHistory(effectId, rows.map(toHistoryRow), effect && { journal: effect.journal, seq: Number(effect.last_seq) })
  }

  async scanInFlight(): Promise<InFlightScan> {
    this.assertOpen()
    this.assertFull('the in-flight scan')
    // One REPEATABLE READ snapshot: projection, records and heads agree while relays write.
    return this.snapshot('the in-flight scan', async (client) => {
      const projection = (
        await client.query<{ id: string; journal: string; state: string; last_seq: string }>(this.sql.inFlight)
      ).rows.map((r) => ({ id: r.id, journal: r.journal, state: r.state, seq: Number(r.last_seq) }))
      if (projection.length === 0) return { effects: [], recordsRead: 0 }
      const records = await client.query<InFlightRecordRow>({ text: this.sql.inFlightRecords, values: [projection.map((p) => p.id)], rowMode: 'array' })
      const rows = records.rows.map(toInFlightRow)
      const journals = [...new Set(projection.map((p) => p.journal))]
      const ends = new Map<string, JournalEnd>()
      const found = await client.query<{ journal: string; head_seq: string | null; head_hash: string | null; at_head: string | null; beyond: string | null }>(
        this.sql.journalEnds,
        [journals],
      )
      for (const e of found.rows) {
        ends.set(e.journal, {
          journal: e.journal,
          head: e.head_seq === null ? { seq: 0, hash: GENESIS_HASH } : { seq: Number(e.head_seq), hash: e.head_hash! },
          atHead: e.at_head,
          beyond: e.beyond === null ? null : Number(e.beyond),
        })
      }
      return { ...checkInFlight(projection, rows, ends), recordsRead: rows.length }
    })
  }

  async list(filter: ListFilter = {}): Promise<EffectSnapshot[]> {
    this.assertOpen()
    const where: string[] = []
    const values: unknown[] = []
    if (filter.states?.length) where.push(`state IN (${stateList(filter.states)})`)
    if (filter.target !== undefined) {
      values.push(filter.target)
      where.push(`target = $${values.length}`)
    }
    if (filter.thread !== undefined) {
      values.push(filter.thread)
      where.push(this.sql.inThread(values.length))
    }
    // Fields of the effect's JSON, read from the rows the other conditions leave (a thread's, for the gateway's key check).
    if (filter.principal !== undefined) {
      values.push(filter.principal)
      where.push(`effect->>'principal' = $${values.length}`)
    }
    if (filter.key !== undefined) {
      values.push(filter.key)
      where.push(`effect->>'key' = $${values.length}`)
    }
    if (filter.idPrefix !== undefined) {
      // A range on the primary key ("g" follows every hex digit in C and in linguistic collations): the index answers it.
      values.push(filter.idPrefix, `${filter.idPrefix}g`)
      where.push(`id >= $${values.length - 1} AND id < $${values.length}`)
    }
    if (filter.since !== undefined) {
      values.push(filter.since)
      where.push(`created_at >= $${values.length}::timestamptz`)
    }
    if (filter.until !== undefined) {
      values.push(filter.until)
      where.push(`created_at < $${values.length}::timestamptz`)
    }
    let text = `SELECT ${this.sql.effectColumns} FROM ${this.sql.effectsTable}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC`
    if (filter.limit !== undefined) {
      values.push(filter.limit)
      text += ` LIMIT $${values.length}`
    }
    if (filter.offset !== undefined) {
      values.push(filter.offset)
      text += ` OFFSET $${values.length}`
    }
    return (await this.query<EffectRow>('listing effects', text, values)).rows.map(toSnapshot)
  }

  async countByState(states?: readonly State[]): Promise<Record<State, number>> {
    this.assertOpen()
    // One grouped query (the state index serves it, and reads only the states asked for); count(*) is bigint, sent as text.
    const where = states ? ` WHERE state IN (${stateList(states)})` : ''
    const { rows } = await this.query<{ state: string; n: string }>('counting effects', `SELECT state, count(*) AS n FROM ${this.sql.effectsTable}${where} GROUP BY state`, [])
    const counts = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<State, number>
    for (const r of rows) if ((STATES as readonly string[]).includes(r.state)) counts[r.state as State] = Number(r.n)
    return counts
  }

  async *records(after?: ReadonlyMap<string, number>): AsyncIterable<JournalRecord> {
    this.assertOpen()
    this.assertFull('reading every journal')
    const page = async (journal: string, seq: number, limit: number) => (await this.query<RecordRow>('reading records', this.sql.recordsPage, [journal, seq, limit], 'array')).rows
    yield* recordPages(page, toRecord, this.pageSize, after)
  }

  claim(request: ClaimRequest): Promise<ClaimedEffect[]> {
    this.assertOpen()
    this.assertFull('claiming effects')
    return claim(this.bound, this.leases, request)
  }

  renewLease(relay: string, leases: readonly LeaseRef[], leaseMs: number): Promise<string[]> {
    this.assertOpen()
    this.assertFull('renewing leases')
    return renewLease(this.bound, this.leases, relay, leases, leaseMs)
  }

  releaseLease(relay: string, leases: readonly LeaseRef[]): Promise<void> {
    this.assertOpen()
    this.assertFull('releasing leases')
    return releaseLease(this.bound, this.leases, relay, leases)
  }

  heartbeat(relay: string, info: JsonObject): Promise<void> {
    this.assertOpen()
    this.assertFull('a relay heartbeat')
    return heartbeat(this.bound, this.leases, relay, info)
  }

  relays(): Promise<RelayHeartbeat[]> {
    this.assertOpen()
    this.assertFull('listing relays')
    return relays(this.bound, this.leases)
  }

  async checkpoints(): Promise<StoredCheckpoint[]> {
    this.assertOpen()
    this.assertFull('reading checkpoints')
    const { rows } = await this.query<{ digest: string; made_at: Date; document: JsonObject }>('reading checkpoints', this.sql.checkpoints, [])
    return rows.map((r) => ({ digest: r.digest, madeAt: r.made_at.toISOString(), document: r.document }))
  }

  async prune(request: PruneRequest): Promise<PruneResult> {
    this.assertOpen()
    this.assertFull('pruning')
    try {
      return await prunePostgres(this.pool, this.schema, request, this.where)
    } catch (e) {
      throw pgError(e, 'pruning', this.where)
    }
  }

  forgetRelays(olderThanMs: number): Promise<number> {
    this.assertOpen()
    this.assertFull('forgetting relays')
    return forgetRelays(this.bound, this.leases, olderThanMs)
  }

  // Every role that keeps reads goes through remember_read() and own_thread_reads (schemas/postgres/0006_callers.sql),
  // an agent role as any other: reads are kept apart per database role.
  async rememberRead(scope: ReadScope, read: string, digest: string): Promise<void> {
    this.assertOpen()
    await this.query('keeping a read', this.sql.rememberRead, [scope.principal, scope.thread, scope.target, read, digest])
  }

  async recallRead(scope: ReadScope, read: string): Promise<string | undefined> {
    this.assertOpen()
    const { rows } = await this.query<{ digest: string }>('recalling a read', this.sql.recallRead, [scope.principal, scope.thread, scope.target, read])
    return rows[0]?.digest
  }

  subscribe?(event: StoreEvent, listener: () => void): Promise<() => Promise<void>> {
    this.assertOpen()
    return this.listener!.subscribe(event, listener)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.listener?.close()
    await this.pool.end()
  }

  private readonly bound = <R extends pg.QueryResultRow>(what: string, text: string, values: unknown[]) => this.query<R>(what, text, values)

  private async query<R extends pg.QueryResultRow>(what: string, text: string, values: unknown[], rowMode?: 'array'): Promise<pg.QueryResult<R>> {
    try {
      const config: pg.QueryConfig = rowMode ? ({ text, values, rowMode } as pg.QueryArrayConfig) : { text, values }
      return (await this.pool.query(config)) as unknown as pg.QueryResult<R>
    } catch (e) {
      throw pgError(e, what, this.where)
    }
  }

  /** Runs reads in one REPEATABLE READ, READ ONLY transaction: they all see the same committed state. */
  private async snapshot<T>(what: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect(what)
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      const result = await fn(client)
      await client.query('COMMIT')
      client.release()
      return result
    } catch (e) {
      const broken = isTransientPgError(e) || !(await rollback(client))
      client.release(broken ? asError(e) : undefined)
      throw pgError(e, what, this.where)
    }
  }

  private async connect(what: string): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect()
    } catch (e) {
      throw pgError(e, what, this.where)
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreError(`the store on ${this.where} is closed`)
  }

  /** Agent access reads its own effects and proposes; the rest is the relays' and operators' work. */
  private assertFull(what: string): void {
    if (this.access === 'full') return
    throw new StoreError(`${what} is not open to agent access ([store] access = "agent") on ${this.where}`, {
      hint: 'An agent proposes effects and reads its own; relays, operators and auditors use [store] access = "full" (the default) with their own database roles.',
    })
  }
}

async function rollback(client: pg.PoolClient): Promise<boolean> {
  try {
    await client.query('ROLLBACK')
    return true
  } catch {
    return false
  }
}

function hasSqlState(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e))
}
