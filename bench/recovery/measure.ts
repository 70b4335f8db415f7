/**
 * What bench/recovery times, on one store, with one checkout's code (this
 * one, or `--baseline`'s: its own store, gate and reconcile, on the same
 * data): the in-flight scan, `gate.recover()` and `reconcile-effects`
 * deciding what to do (dry runs: every read and check, nothing sent), the
 * binary's `reconcile-effects --dry-run` as cron runs it, and both acting on
 * every effect in flight. Acting changes the store; `restore` puts back what
 * it changed (the records past the saved heads, the heads, the open effects'
 * rows), so each action starts from the same journals.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { OperatorConfig, StoreConfig } from '../../src/core/config/types.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import type { Meta } from './build.js'
import { RULE } from './dataset.js'
import { benchTargets } from './targets.js'

/** The pieces of a checkout's code the bench drives (imported from its src/, so another checkout's code runs as it is). */
export interface Code {
  root: string
  openStore: (config: StoreConfig, options?: { groupCommit?: boolean }) => Promise<any>
  Gate: new (options: any) => any
  RulesPolicy: new (rules: any[]) => any
  reconcileEffects: (options: any) => Promise<any>
}

export async function codeOf(root: string): Promise<Code> {
  const m = (path: string) => import(join(root, path))
  return {
    root,
    openStore: (await m('src/core/stores/open.ts')).openStore,
    Gate: (await m('src/core/gate.ts')).Gate,
    RulesPolicy: (await m('src/core/policy/rules.ts')).RulesPolicy,
    reconcileEffects: (await m('src/core/reconcile/reconcile.ts')).reconcileEffects,
  }
}

/** Who may release held effects: nobody released any here, so each HELD effect waits. */
export const OPERATORS: OperatorConfig[] = [{ name: 'alice', publicKey: generateKeyPair('operator', 'alice').publicKey }]
const CONCURRENCY = 16
const GRACE_MS = 60_000

export interface Timed {
  /** Wall-clock milliseconds of each run, in order. */
  runs: number[]
  /**
   * CPU milliseconds of each run (user + system) of this process, or of the
   * child: on a shared machine the wall clock also measures the neighbours.
   * A PostgreSQL server's own work is not in it.
   */
  cpu: number[]
  detail: string
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Wall and CPU time of `fn`. */
async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; cpuMs: number }> {
  const cpu = process.cpuUsage()
  const t = performance.now()
  const value = await fn()
  const ms = performance.now() - t
  const used = process.cpuUsage(cpu)
  return { value, ms, cpuMs: (used.user + used.system) / 1000 }
}

async function repeat(times: number, once: () => Promise<{ ms: number; cpuMs: number; detail: string }>): Promise<Timed> {
  const out: Timed = { runs: [], cpu: [], detail: '' }
  for (let i = 0; i < times; i++) {
    const r = await once()
    out.runs.push(r.ms)
    out.cpu.push(r.cpuMs)
    out.detail = r.detail
  }
  return out
}

async function withStore<T>(code: Code, config: StoreConfig, fn: (store: any) => Promise<T>): Promise<T> {
  const store = await code.openStore(config)
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

export function scan(code: Code, config: StoreConfig, times: number): Promise<Timed> {
  return repeat(times, () =>
    withStore(code, config, async (store) => {
      const { value: s, ms, cpuMs } = await timed<any>(() => store.scanInFlight())
      return { ms, cpuMs, detail: `${s.effects.length} in flight, ${s.recordsRead.toLocaleString('en')} records read` }
    }),
  )
}

export function recoverDryRun(code: Code, config: StoreConfig, times: number): Promise<Timed> {
  return repeat(times, () =>
    withStore(code, config, async (store) => {
      const gate = new code.Gate({ store, targets: benchTargets(), policy: new code.RulesPolicy([RULE]) })
      const { value: r, ms, cpuMs } = await timed<any>(() => gate.recover({ dryRun: true, releases: { operators: OPERATORS } }))
      await gate.close()
      return { ms, cpuMs, detail: `${r.effects.length} planned (${plans(r.effects)})` }
    }),
  )
}

export function reconcileDryRun(code: Code, config: StoreConfig, times: number): Promise<Timed> {
  return repeat(times, () =>
    withStore(code, config, async (store) => {
      const { value: r, ms, cpuMs } = await timed<any>(() => code.reconcileEffects(reconcileOptions(code, store, config, true)))
      return { ms, cpuMs, detail: `${r.status}: ${r.report.effects.length} planned, ${r.report.effects.filter((e: any) => e.action === 'refused').length} refused` }
    }),
  )
}

function reconcileOptions(code: Code, store: unknown, config: StoreConfig, dryRun: boolean) {
  return { store, storeConfig: config, targets: benchTargets(), policy: new code.RulesPolicy([RULE]), operators: OPERATORS, olderThanMs: GRACE_MS, concurrency: CONCURRENCY, dryRun }
}

/** `interlock reconcile-effects --dry-run` as cron runs it: a process of its own, start-up included (and `--version` beside it: the start-up alone). */
export function cliDryRun(code: Code, configFile: string, times: number): { run: Timed; startup: Timed } {
  const built = existsSync(join(code.root, 'dist', 'commands', 'reconcile-effects.js'))
  const bin = join(code.root, 'bin', built ? 'run.js' : 'dev.js')
  // The child's CPU time from GNU time (its user and system seconds on stderr's last line).
  const spawn = (args: string[]) => {
    const t = performance.now()
    const r = spawnSync('/usr/bin/time', ['-f', 'cpu %U %S', process.execPath, bin, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
    const cpu = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr)
    return { ms: performance.now() - t, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : NaN, r }
  }
  const run: Timed = { runs: [], cpu: [], detail: '' }
  for (let i = 0; i < times; i++) {
    const { ms, cpuMs, r } = spawn(['reconcile-effects', '--dry-run', '--json', '--config', configFile, '--older-than', `${GRACE_MS / 1000}s`, '--concurrency', `${CONCURRENCY}`])
    if (r.status !== 0 && r.status !== 10 && r.status !== 1) throw new Error(`reconcile-effects exited ${r.status}: ${r.stderr}${r.stdout.slice(0, 2000)}`)
    const out = JSON.parse(r.stdout)
    run.runs.push(ms)
    run.cpu.push(cpuMs)
    run.detail = `exit ${r.status}, ${out.report.effects.length} planned, its recovery ${Math.round(out.report.durationMs)} ms (${built ? 'bin/run.js' : 'bin/dev.js, through tsx'})`
  }
  const startup: Timed = { runs: [], cpu: [], detail: '`interlock --version`' }
  for (let i = 0; i < times; i++) {
    const { ms, cpuMs } = spawn(['--version'])
    startup.runs.push(ms)
    startup.cpu.push(cpuMs)
  }
  return { run, startup }
}

/** gate.recover() acting on every effect in flight, then reconcile-effects acting on them: each from the same journals. */
export async function acting(code: Code, config: StoreConfig, raw: RawStore): Promise<{ recover: Timed; reconcile: Timed }> {
  const saved = await raw.save()
  try {
    const recover = await withStore(code, config, async (store): Promise<Timed> => {
      const gate = new code.Gate({ store, targets: benchTargets(), policy: new code.RulesPolicy([RULE]) })
      const { value: r, ms, cpuMs } = await timed<any>(() => gate.recover({ concurrency: CONCURRENCY, releases: { operators: OPERATORS } }))
      await gate.close()
      return { runs: [ms], cpu: [cpuMs], detail: `${actions(r.effects)}` }
    })
    await raw.restore(saved)
    const reconcile = await withStore(code, config, async (store): Promise<Timed> => {
      const { value: r, ms, cpuMs } = await timed<any>(() => code.reconcileEffects(reconcileOptions(code, store, config, false)))
      return { runs: [ms], cpu: [cpuMs], detail: `${r.status}: ${actions(r.report.effects)}` }
    })
    return { recover, reconcile }
  } finally {
    await raw.restore(saved)
  }
}

function plans(effects: { plan: string }[]): string {
  return tally(effects.map((e) => e.plan))
}

function actions(effects: { action: string }[]): string {
  return tally(effects.map((e) => e.action))
}

function tally(xs: string[]): string {
  const n = new Map<string, number>()
  for (const x of xs) n.set(x, (n.get(x) ?? 0) + 1)
  return [...n].map(([k, v]) => `${v} ${k}`).join(', ')
}

/** What an acting run changes, saved and put back behind the store's back. */
export interface RawStore {
  save(): Promise<Saved>
  restore(saved: Saved): Promise<void>
  close(): Promise<void>
}

interface Saved {
  heads: { journal: string; head_seq: number; head_hash: string }[]
  effects: Record<string, unknown>[]
}

const EFFECT_STATE = ['state', 'last_seq', 'detail', 'updated_at', 'lease_relay', 'lease_token', 'lease_expires']

export function rawSqlite(file: string, meta: Meta): RawStore {
  const db = new Database(file)
  db.pragma('busy_timeout = 10000')
  const ids = JSON.stringify(meta.open.map((o) => o.id))
  const journals = JSON.stringify([...new Set(meta.open.map((o) => o.journal))])
  const columns = [...EFFECT_STATE, 'settled_at']
  return {
    async save() {
      return {
        heads: db.prepare(`SELECT journal, head_seq, head_hash FROM journals WHERE journal IN (SELECT value FROM json_each(?))`).all(journals) as Saved['heads'],
        effects: db.prepare(`SELECT id, ${columns.join(', ')} FROM effects WHERE id IN (SELECT value FROM json_each(?))`).all(ids) as Saved['effects'],
      }
    },
    async restore(saved) {
      db.transaction(() => {
        for (const h of saved.heads) {
          db.prepare(`DELETE FROM journal_records WHERE journal = ? AND seq > ?`).run(h.journal, h.head_seq)
          db.prepare(`UPDATE journals SET head_seq = ?, head_hash = ? WHERE journal = ?`).run(h.head_seq, h.head_hash, h.journal)
        }
        const update = db.prepare(`UPDATE effects SET ${columns.map((c) => `${c} = @${c}`).join(', ')} WHERE id = @id`)
        for (const e of saved.effects) update.run(e)
      })()
      db.pragma('wal_checkpoint(TRUNCATE)')
    },
    async close() {
      db.close()
    },
  }
}

export async function rawPostgres(url: string, schema: string, meta: Meta): Promise<RawStore> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const s = `"${schema}"`
  const ids = meta.open.map((o) => o.id)
  const journals = [...new Set(meta.open.map((o) => o.journal))]
  return {
    async save() {
      return {
        heads: (await client.query(`SELECT journal, head_seq::int AS head_seq, head_hash FROM ${s}.journals WHERE journal = ANY($1)`, [journals])).rows,
        effects: (
          await client.query(
            `SELECT id, state, last_seq::text, detail::text, updated_at::text, lease_relay, lease_token::text, lease_expires::text FROM ${s}.effects WHERE id = ANY($1)`,
            [ids],
          )
        ).rows,
      }
    },
    async restore(saved) {
      await client.query('BEGIN')
      await client.query(
        `DELETE FROM ${s}.journal_records r USING unnest($1::text[], $2::bigint[]) AS h(journal, seq) WHERE r.journal = h.journal AND r.seq > h.seq`,
        [saved.heads.map((h) => h.journal), saved.heads.map((h) => h.head_seq)],
      )
      await client.query(
        `UPDATE ${s}.journals j SET head_seq = h.seq, head_hash = h.hash FROM unnest($1::text[], $2::bigint[], $3::text[]) AS h(journal, seq, hash) WHERE j.journal = h.journal`,
        [saved.heads.map((h) => h.journal), saved.heads.map((h) => h.head_seq), saved.heads.map((h) => h.head_hash)],
      )
      const col = (c: string) => saved.effects.map((e) => e[c] as string | null)
      await client.query(
        `UPDATE ${s}.effects e SET state = x.state, last_seq = x.last_seq::bigint, detail = x.detail::json, updated_at = x.updated_at::timestamptz,
           lease_relay = x.lease_relay, lease_token = x.lease_token::bigint, lease_expires = x.lease_expires::timestamptz
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
           AS x(id, state, last_seq, detail, updated_at, lease_relay, lease_token, lease_expires) WHERE e.id = x.id`,
        ['id', ...EFFECT_STATE].map(col),
      )
      await client.query('COMMIT')
    },
    async close() {
      await client.end()
    },
  }
}
