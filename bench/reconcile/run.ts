/**
 * bench/reconcile: what one `interlock reconcile-effects` run costs the
 * PostgreSQL store when it has nothing to do, as cron runs it every few
 * minutes beside live relays.
 *
 * On an embedded PostgreSQL server of its own (durable settings, so WAL is
 * what a production server writes, full-page images included), `n` effects
 * are journaled PROPOSED, as agents leave them, just now: all younger than
 * reconcile's grace period, so there is nothing for it to act on. Then the
 * binary runs `reconcile-effects` twice, each right after a CHECKPOINT (a
 * cron run seldom shares a checkpoint interval with the previous one), and
 * for each run this prints the rows of the schema it updated (from
 * pg_stat_user_tables) and the WAL the server wrote meanwhile.
 *
 * --repo points at another checkout to measure its code (its own schema,
 * store and binary), e.g. a worktree of an older commit:
 *
 *   npx tsx bench/reconcile/run.ts [--effects 20000] [--repo /path/to/checkout]
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { startTestPostgres } from '../../test/helpers/postgres-server.js'

const args = process.argv.slice(2)
const opt = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback)
const N = Number(opt('--effects', '20000'))
const REPO = resolve(opt('--repo', '.'))
const SCHEMA = 'interlock'
const THREADS = 1000

// The checkout under test's own code: its migrations fill its own schema.
const { install } = await import(join(REPO, 'src/core/stores/migrate.ts'))
const { openStore } = await import(join(REPO, 'src/core/stores/open.ts'))
const { toEffect } = await import(join(REPO, 'src/core/effect.ts'))
const { proposal } = await import(join(REPO, 'src/core/gate-context.ts'))

const server = await startTestPostgres({ durable: true })
if (!server.url) throw new Error(server.error)
const url = new URL(server.url)
url.pathname = '/bench_reconcile'
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
await admin.query('CREATE DATABASE bench_reconcile')
const db = new pg.Client({ connectionString: url.toString() })
await db.connect()
const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-reconcile-'))

try {
  const store = { kind: 'postgres', url: url.toString(), schema: SCHEMA }
  await install(store)
  process.stderr.write(`filling ${N} PROPOSED effects... `)
  const s = await openStore(store, { groupCommit: false })
  try {
    for (let i = 0; i < N; i += 1000) {
      const requests = []
      for (let j = i; j < Math.min(N, i + 1000); j++) {
        const effect = toEffect({ thread: `agent-${j % THREADS}`, target: 'noop', action: 'ping', args: { j } })
        requests.push({ effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, 1), effect, tier: 1 })
      }
      await s.append(requests)
    }
  } finally {
    await s.close()
  }
  // Settled pages, so what is measured is reconcile's own writing, not hint bits or autovacuum catching up.
  await db.query(`VACUUM (FREEZE, ANALYZE)`)
  process.stderr.write('done\n')
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]\nkind = "postgres"\nurl = "${url}"\nschema = "${SCHEMA}"\n\n[targets.noop]\ntype = "http"\ntier = 1\nurl = "http://127.0.0.1:9/nothing-listens-here"\n`,
  )

  console.log(`\nbench/reconcile: ${N} PROPOSED effects younger than the grace period (nothing to do), ${REPO}\n`)
  console.log('| run | exit | rows updated | WAL bytes | seconds |')
  console.log('|---|---|---|---|---|')
  for (const run of [1, 2]) {
    await db.query('CHECKPOINT')
    const before = await measure()
    const t0 = performance.now()
    const r = spawnSync(process.execPath, [join(REPO, 'bin/dev.js'), 'reconcile-effects', '--config', join(dir, 'interlock.toml'), '--json'], {
      cwd: dir,
      encoding: 'utf8',
    })
    const seconds = (performance.now() - t0) / 1000
    if (r.status !== 0) throw new Error(`reconcile-effects exited ${r.status}: ${r.stderr}${r.stdout}`)
    // The backend's counters reach the shared statistics when it exits; give the flush a moment.
    await new Promise((done) => setTimeout(done, 1_500))
    const after = await measure()
    console.log(`| ${run} | ${r.status} | ${after.updated - before.updated} | ${after.wal - before.wal} | ${seconds.toFixed(1)} |`)
  }
} finally {
  await db.end()
  await admin.query('DROP DATABASE bench_reconcile WITH (FORCE)').catch(() => {})
  await admin.end()
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
}

async function measure(): Promise<{ updated: number; wal: number }> {
  await db.query('SELECT pg_stat_clear_snapshot()')
  const upd = await db.query<{ n: string }>(`SELECT coalesce(sum(n_tup_upd), 0)::text AS n FROM pg_stat_user_tables WHERE schemaname = $1`, [SCHEMA])
  const wal = await db.query<{ lsn: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text AS lsn`)
  return { updated: Number(upd.rows[0]!.n), wal: Number(wal.rows[0]!.lsn) }
}
