/**
 * Builds the dataset (dataset.ts) into a SQLite journal, the form it is kept
 * in between runs (`--data <dir>`), and loads the same rows into PostgreSQL.
 *
 * Bulk loading: the schema is the stores' own (installed by their
 * migrations); the secondary indexes are dropped while rows go in, in large
 * transactions without fsync, and built again at the end. Nothing else
 * differs from a journal the stores wrote: every record valid, hash-chained,
 * signed where a relay signs, every effects row and journal head as the
 * stores keep them.
 */
import { chmodSync, createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'
import pg from 'pg'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { install } from '../../src/core/stores/migrate.js'
import { RELAY, type JournalRows, type OpenKind, type Plan } from './dataset.js'

export interface Meta {
  plan: Plan
  records: number
  effects: number
  open: { id: string; journal: string; kind: OpenKind; state: string; target: string }[]
  relayPublicKey: string
  buildSeconds: number
}

const SQLITE_INDEXES = ['journal_records_effect', 'effects_open', 'effects_settled', 'effects_created', 'effects_target_created']

/** The dataset in `dir` (journal.db, meta.json), built unless one of this plan is there already. */
export async function sqliteDataset(dir: string, plan: Plan, log: (s: string) => void): Promise<{ file: string; meta: Meta }> {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'journal.db')
  const metaFile = join(dir, 'meta.json')
  if (existsSync(metaFile)) {
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as Meta
    if (JSON.stringify(meta.plan) === JSON.stringify(plan) && existsSync(file)) {
      log(`dataset: reusing ${file} (${meta.records.toLocaleString('en')} records, built in ${meta.buildSeconds.toFixed(0)} s)`)
      return { file, meta }
    }
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`, metaFile]) rmSync(f, { force: true })
  const started = performance.now()
  await install({ kind: 'sqlite', path: file })
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = OFF')
  db.pragma('cache_size = -1048576')
  const indexSql = SQLITE_INDEXES.map((name) => db.prepare(`SELECT sql FROM sqlite_master WHERE name = ?`).pluck().get(name) as string)
  for (const name of SQLITE_INDEXES) db.exec(`DROP INDEX ${name}`)
  const insertRecord = db.prepare(`INSERT INTO journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
  const insertEffect = db.prepare(
    `INSERT INTO effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insertHead = db.prepare(`INSERT INTO journals (journal, head_seq, head_hash) VALUES (?, ?, ?)`)
  const insertSeal = db.prepare(`INSERT INTO seals (at, seal) VALUES (?, ?)`)
  const meta: Meta = { plan, records: 0, effects: 0, open: [], relayPublicKey: '', buildSeconds: 0 }
  const insert = db.transaction((rows: JournalRows) => {
    for (const r of rows.records) insertRecord.run(r)
    for (const e of rows.effects) insertEffect.run(e[0], e[1], e[1], ...e.slice(2))
    insertHead.run(rows.journal, rows.head.seq, rows.head.hash)
    for (const seal of rows.seals) insertSeal.run(seal)
  })
  const seed = randomBytes(32)
  meta.relayPublicKey = generateKeyPair('relay', RELAY, seed).publicKey
  // A year ago: every record is older than any grace period; journals interleave in time.
  const base = Date.now() - 365 * 86_400_000
  let done = 0
  await generate(plan, [...seed], base, (rows) => {
    insert(rows)
    meta.records += rows.records.length
    meta.effects += rows.effects.length
    for (const o of rows.open) meta.open.push({ ...o, journal: rows.journal })
    if (++done % Math.max(1, Math.floor(plan.journals / 20)) === 0) log(`  ${done}/${plan.journals} journals, ${meta.records.toLocaleString('en')} records, ${((performance.now() - started) / 1000).toFixed(0)} s`)
  })
  log('  building indexes')
  for (const sql of indexSql) db.exec(sql)
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
  meta.buildSeconds = (performance.now() - started) / 1000
  writeFileSync(metaFile, JSON.stringify(meta))
  return { file, meta }
}

/** Runs the journals through worker threads (signing is most of the work), handing each to `take` as it comes. */
async function generate(plan: Plan, seed: number[], base: number, take: (rows: JournalRows) => void): Promise<void> {
  const width = Math.max(1, Math.min(availableParallelism(), plan.journals))
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      const worker = new Worker(new URL('./generate-worker.ts', import.meta.url), { workerData: { plan, seed, base } })
      try {
        while (next < plan.journals) {
          const j = next++
          worker.postMessage(j)
          const [rows] = (await once(worker, 'message')) as [JournalRows]
          take(rows)
        }
      } finally {
        await worker.terminate()
      }
    }),
  )
}

const COPY_ROWS = 1_000_000
const PG_INDEXES = ['journal_records_effect_idx', 'effects_state_idx', 'effects_claim_idx', 'effects_created_idx', 'effects_target_created_idx']

/**
 * Loads the SQLite dataset into schema `schema` of the database at `url`
 * (installed here): each table written out as COPY text under `tmp` (the
 * server reads it: it must be on this host and readable by the server's
 * user), COPY FROM, indexes rebuilt, then VACUUM ANALYZE (as autovacuum
 * leaves a store that has run for a while) and a CHECKPOINT.
 */
export async function loadPostgres(sqliteFile: string, url: string, schema: string, tmp: string, log: (s: string) => void): Promise<number> {
  const started = performance.now()
  await install({ kind: 'postgres', url, schema })
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const s = `"${schema}"`
    const indexes = (await client.query<{ indexname: string; indexdef: string }>(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = ANY($2)`, [schema, PG_INDEXES])).rows
    for (const i of indexes) await client.query(`DROP INDEX ${s}."${i.indexname}"`)
    mkdirSync(tmp, { recursive: true })
    chmodSync(tmp, 0o755)
    const db = new Database(sqliteFile, { readonly: true })
    try {
      const tables: [string, string, string][] = [
        ['journals', 'journal, head_seq, head_hash', 'SELECT journal, head_seq, head_hash FROM journals'],
        ['effects', 'id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at', 'SELECT id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at FROM effects'],
        ['journal_records', 'journal, seq, effect_id, state, at, data, prev_hash, hash', 'SELECT journal, seq, effect_id, state, at, data, prev_hash, hash FROM journal_records ORDER BY journal, seq'],
        ['seals', 'at, seal', 'SELECT at, seal FROM seals ORDER BY id'],
      ]
      // In files of a million rows at most, each copied and removed before the next: a few GB of disk at a time, not the dataset twice.
      for (const [table, columns, select] of tables) {
        const path = join(tmp, `${table}.copy`)
        let n = 0
        let out = createWriteStream(path, { mode: 0o644 })
        const flush = async () => {
          out.end()
          await once(out, 'finish')
          chmodSync(path, 0o644)
          await client.query(`COPY ${s}.${table} (${columns}) FROM '${path}'`)
          rmSync(path)
        }
        for (const row of db.prepare(select).raw(true).iterate() as Iterable<unknown[]>) {
          if (!out.write(`${row.map(copyText).join('\t')}\n`)) await once(out, 'drain')
          if (++n % COPY_ROWS === 0) {
            await flush()
            out = createWriteStream(path, { mode: 0o644 })
          }
        }
        await flush()
        log(`  ${table}: ${n.toLocaleString('en')} rows, ${((performance.now() - started) / 1000).toFixed(0)} s`)
      }
    } finally {
      db.close()
    }
    log('  building indexes')
    for (const i of indexes) await client.query(i.indexdef)
    await client.query(`VACUUM ANALYZE`)
    await client.query('CHECKPOINT')
  } finally {
    await client.end()
  }
  return (performance.now() - started) / 1000
}

/** A value in COPY's text format. */
function copyText(v: unknown): string {
  if (v === null || v === undefined) return '\\N'
  return String(v).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r')
}
