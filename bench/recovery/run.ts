/**
 * bench/recovery: what recovery and `reconcile-effects` cost with 1,000
 * effects in flight among 10,000,000 journal records, on SQLite and on
 * PostgreSQL (goal: each ≤ 1 s), and the same with another checkout's code
 * on the same journals (`--baseline`: the approach before, which read every
 * record of every journal holding an effect in flight).
 *
 *   npx tsx bench/recovery/run.ts [--records 10000000] [--journals 1000] [--in-flight 1000]
 *       [--stores sqlite,postgres] [--baseline /path/to/checkout] [--data <dir>] [--times 3] [--no-acting]
 *
 * The journals (dataset.ts) are built once into a SQLite file, kept with
 * `--data <dir>` for the next run, and loaded into an embedded PostgreSQL 18
 * of the bench's own (fsync on) with COPY (build.ts). What is timed
 * (measure.ts), each `--times` times, first and median printed:
 * - scan: store.scanInFlight(), recovery's read;
 * - recover dry run: gate.recover({ dryRun: true }), the read and every
 *   decision of the recovery table (nothing sent, nothing written);
 * - reconcile dry run: reconcileEffects({ dryRun: true }) in process, the
 *   read, the decisions, the relay's journal check of every effect it would
 *   act on, the counts and the later-outcome sweep;
 * - reconcile-effects --dry-run: the binary, as cron runs it (its start-up
 *   shown beside it);
 * - acting (this checkout only, once each): gate.recover() and then
 *   reconcile-effects acting on every effect in flight through in-process
 *   targets (targets.ts), 16 at a time per target; each a durable commit or
 *   two per effect. The journals are put back between them.
 * The machine's load (`uptime`) is printed beside the figures.
 */
import { execSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import type { StoreConfig } from '../../src/core/config/types.js'
import { startTestPostgres } from '../../test/helpers/postgres-server.js'
import { loadPostgres, sqliteDataset, type Meta } from './build.js'
import { RULE, TIERS } from './dataset.js'
import { acting, cliDryRun, codeOf, median, OPERATORS, rawPostgres, rawSqlite, recoverDryRun, reconcileDryRun, scan, type Code, type RawStore, type Timed } from './measure.js'

const GOAL_MS = 1000
const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '10000000' },
    journals: { type: 'string', default: '1000' },
    'in-flight': { type: 'string', default: '1000' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    baseline: { type: 'string' },
    data: { type: 'string' },
    times: { type: 'string', default: '3' },
    'no-acting': { type: 'boolean', default: false },
  },
})
const plan = { records: Number(values.records), journals: Number(values.journals), inFlight: Number(values['in-flight']) }
const times = Number(values.times)
const scratch = mkdtempSync(join(tmpdir(), 'interlock-bench-recovery-'))
// The PostgreSQL server reads the COPY files under it, as its own system user.
chmodSync(scratch, 0o755)
const dataDir = values.data ? resolve(values.data) : join(scratch, 'data')
const log = (s: string) => process.stderr.write(`${s}\n`)
const load = () => execSync('uptime', { encoding: 'utf8' }).trim().replace(/^.*load average: /, 'load ')

interface Row {
  store: string
  code: string
  what: string
  t: Timed
  goal?: boolean
  load: string
}
const rows: Row[] = []

try {
  log(`bench/recovery: ${plan.records.toLocaleString('en')} records, ${plan.journals} journals, ${plan.inFlight} in flight; ${load()}`)
  const { file, meta } = await sqliteDataset(dataDir, plan, log)
  const codes: [string, Code][] = [['this', await codeOf(resolve('.'))]]
  if (values.baseline) codes.push([`baseline ${values.baseline}`, await codeOf(resolve(values.baseline))])
  for (const kind of values.stores.split(',').filter(Boolean)) {
    if (kind === 'sqlite') {
      await measureStore('SQLite', { kind: 'sqlite', path: file }, () => rawSqlite(file, meta), codes, meta)
    } else if (kind === 'postgres') {
      const server = await startTestPostgres({ durable: true })
      if (!server.url) throw new Error(server.error)
      try {
        const admin = new pg.Client({ connectionString: server.url })
        await admin.connect()
        // Loading gigabytes through the WAL: fewer checkpoints, and a bound on the disk the WAL takes.
        await admin.query(`ALTER SYSTEM SET max_wal_size = '4GB'`)
        await admin.query(`ALTER SYSTEM SET checkpoint_timeout = '1h'`)
        await admin.query(`SELECT pg_reload_conf()`)
        await admin.query('CREATE DATABASE bench_recovery')
        await admin.end()
        const url = new URL(server.url)
        url.pathname = '/bench_recovery'
        log(`PostgreSQL: loading the dataset (COPY); ${load()}`)
        const seconds = await loadPostgres(file, url.toString(), 'interlock', join(scratch, 'copy'), log)
        log(`  loaded in ${seconds.toFixed(0)} s`)
        const config: StoreConfig = { kind: 'postgres', url: url.toString(), schema: 'interlock' }
        await measureStore('PostgreSQL', config, () => rawPostgres(url.toString(), 'interlock', meta), codes, meta)
      } finally {
        await server.stop()
      }
    } else throw new Error(`unknown store ${kind}`)
  }
} finally {
  // The dataset stays only when it lives in --data.
  rmSync(scratch, { recursive: true, force: true })
}

print()

async function measureStore(name: string, config: StoreConfig, raw: () => RawStore | Promise<RawStore>, codes: [string, Code][], meta: Meta): Promise<void> {
  const configFile = join(scratch, `${name}.toml`)
  writeFileSync(configFile, toml(config))
  for (const [label, code] of codes) {
    const ours = label === 'this'
    const add = (what: string, t: Timed, goal = false) => {
      rows.push({ store: name, code: label, what, t, goal: goal && ours, load: load() })
      log(`${name} ${label} ${what}: ${t.runs.map((ms, i) => `${ms.toFixed(0)} ms (${t.cpu[i]!.toFixed(0)} CPU)`).join(', ')} (${t.detail}); ${load()}`)
    }
    add('scan (store.scanInFlight)', await scan(code, config, times), true)
    add('recover dry run', await recoverDryRun(code, config, times), true)
    add('reconcile dry run (in process)', await reconcileDryRun(code, config, times), true)
    const cli = cliDryRun(code, configFile, times)
    add('reconcile-effects --dry-run (binary)', cli.run)
    add('  start-up alone', cli.startup)
    if (ours && !values['no-acting']) {
      const r = await raw()
      try {
        const a = await acting(code, config, r)
        add(`recover, acting on ${meta.open.length}`, a.recover)
        add(`reconcile, acting on ${meta.open.length}`, a.reconcile)
      } finally {
        await r.close()
      }
    }
  }
}

function toml(config: StoreConfig): string {
  const store = config.kind === 'sqlite' ? `path = "${config.path}"` : `kind = "postgres"\nurl = "${config.url}"\nschema = "${config.schema}"`
  const targets = Object.entries(TIERS)
    .map(([name, tier]) => `[targets.${name}]\ntype = "http"\ntier = ${tier}\nurl = "http://127.0.0.1:9/${name}"${tier === 2 ? `\nquery_url = "http://127.0.0.1:9/${name}/{effect_id}"` : ''}\n`)
    .join('\n')
  const rule = `[[policy.rules]]\nname = "${RULE.name}"\ntarget = "${RULE.target}"\nquorum = ${RULE.quorum}\nwhen = [{ arg = "amount", above = "500.00", currency = "USD" }]\n`
  const operators = OPERATORS.map((o) => `[[operators]]\nname = "${o.name}"\npublic_key = "${o.publicKey}"\n`).join('\n')
  return `[store]\n${store}\n\n${targets}\n${rule}\n${operators}`
}

function print(): void {
  const fmt = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`)
  console.log(`\nbench/recovery: ${plan.records.toLocaleString('en')} records over ${plan.journals} journals, ${plan.inFlight} effects in flight\n`)
  console.log('| store | code | what | first | median | median CPU | goal ≤ 1 s | detail | load (1, 5, 15 min) |')
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const r of rows) {
    const m = median(r.t.runs)
    const goal = r.goal ? (m <= GOAL_MS ? 'met' : 'MISSED') : ''
    console.log(`| ${r.store} | ${r.code} | ${r.what} | ${fmt(r.t.runs[0]!)} | ${fmt(m)} | ${fmt(median(r.t.cpu))} | ${goal} | ${r.t.detail} | ${r.load.replace('load ', '')} |`)
  }
  if (rows.some((r) => r.goal && median(r.t.runs) > GOAL_MS)) process.exitCode = 1
}
