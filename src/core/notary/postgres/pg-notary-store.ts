/**
 * The notary's log in PostgreSQL (for HA, and for the in-transaction form:
 * docs/notary.md, "What the service must do").
 *
 * An append takes a transaction-scoped advisory lock on its effect before it
 * reads the chain's head, so the head check and the inserts are one step per
 * effect across every connection, the notary's and a service's own
 * transaction alike; the decision row's primary key is the rule's last line
 * (ON CONFLICT DO NOTHING: the first to commit wins).
 */
import pg from 'pg'
import { createPool } from '../../stores/postgres/connect.js'
import { pgError } from '../../stores/postgres/errors.js'
import { quoteSchema } from '../../stores/postgres/identifier.js'
import { GENESIS, type StoredRecord } from '../records.js'
import { isDecision, recordOf, type AppendResult, type DecisionRow, type NotaryStore, type RecordRow } from '../store.js'
import { DEFAULT_NOTARY_SCHEMA, installNotarySchema, type Queryable } from './pg-notary-schema.js'

/** Serializes appends to one effect until the caller's transaction ends. */
export async function lockEffect(db: Queryable, effect: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtextextended('interlock_notary:' || $1, 0))", [effect])
}

export async function readChain(db: Queryable, schema: string, effect: string): Promise<StoredRecord[]> {
  const { rows } = await db.query(`SELECT * FROM ${quoteSchema(schema)}.notary_records WHERE effect = $1 ORDER BY seq`, [effect])
  return (rows as RecordRow[]).map(recordOf)
}

/** Every effect with a record or a decision row, in id order. */
export async function readEffects(db: Queryable, schema: string): Promise<string[]> {
  const s = quoteSchema(schema)
  const { rows } = await db.query(`SELECT effect FROM ${s}.notary_records UNION SELECT effect FROM ${s}.notary_decisions ORDER BY effect`)
  return (rows as { effect: string }[]).map((r) => r.effect)
}

export async function readDecisions(db: Queryable, schema: string, effect: string): Promise<DecisionRow[]> {
  const { rows } = await db.query(`SELECT effect, attempt, decision, writer, seq FROM ${quoteSchema(schema)}.notary_decisions WHERE effect = $1 ORDER BY attempt`, [effect])
  return rows as DecisionRow[]
}

/**
 * Appends inside a transaction the caller has begun (and will commit or roll
 * back). Writes nothing unless it answers 'appended'.
 */
export async function appendIn(db: Queryable, schema: string, r: StoredRecord): Promise<AppendResult> {
  const s = quoteSchema(schema)
  await lockEffect(db, r.effect)
  const { rows } = await db.query(`SELECT seq, hash FROM ${s}.notary_records WHERE effect = $1 ORDER BY seq DESC LIMIT 1`, [r.effect])
  const head = rows[0] as { seq: number; hash: string } | undefined
  if ((head?.hash ?? GENESIS) !== r.prev) return 'stale'
  const seq = (head?.seq ?? 0) + 1
  if (isDecision(r.kind)) {
    const decided = await db.query(
      `INSERT INTO ${s}.notary_decisions (effect, attempt, decision, writer, seq) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
      [r.effect, r.attempt, r.kind, r.writer, seq],
    )
    if (decided.rowCount === 0) return 'decided'
  }
  await db.query(
    `INSERT INTO ${s}.notary_records (effect, seq, attempt, kind, writer, at, body, prev, signature, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [r.effect, seq, r.attempt, r.kind, r.writer, r.at, JSON.stringify(r.body), r.prev, r.signature, r.hash],
  )
  return 'appended'
}

export interface PostgresNotaryStoreOptions {
  url: string
  schema?: string
  maxConnections?: number
  /** Create the schema and tables when missing (default true). */
  install?: boolean
}

export async function openPostgresNotaryStore(opts: PostgresNotaryStoreOptions): Promise<NotaryStore> {
  const schema = opts.schema ?? DEFAULT_NOTARY_SCHEMA
  quoteSchema(schema)
  const where = `the notary's PostgreSQL schema "${schema}"`
  const pool = createPool(opts.url, { maxConnections: opts.maxConnections ?? 10 })
  const withClient = async <T>(what: string, work: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (err) {
      throw pgError(err, 'connecting', where)
    }
    try {
      return await work(client)
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined)
      throw pgError(err, what, where, what === 'appending')
    } finally {
      client.release()
    }
  }
  if (opts.install ?? true) {
    try {
      await withClient('installing', (c) => installNotarySchema(c, schema))
    } catch (err) {
      await pool.end().catch(() => undefined)
      throw err
    }
  }
  return {
    chain: (effect) => withClient('reading', (c) => readChain(c, schema, effect)),
    append: (record) =>
      withClient('appending', async (c) => {
        await c.query('BEGIN')
        const result = await appendIn(c, schema, record)
        await c.query(result === 'appended' ? 'COMMIT' : 'ROLLBACK')
        return result
      }),
    effects: () => withClient('reading', (c) => readEffects(c, schema)),
    decisions: (effect) => withClient('reading', (c) => readDecisions(c, schema, effect)),
    close: () => pool.end(),
  }
}
