/**
 * One failover run for the failover tests: a backlog of effects (tiers 1, 2
 * and 3 on the test's HTTP service, whose own ledger counts applications)
 * drained by relay processes (the built `interlock relay`) through a
 * multi-host URL, while an agent keeps submitting (each input retried until
 * a submit is answered, as an agent does); the primary is killed once part
 * of the backlog has settled, a new primary comes up (`failover`), the relays
 * follow it, and the run ends when the agent is done and nothing is left
 * PROPOSED, AUTHORIZED or DISPATCHED.
 *
 * What it counts:
 * - appliedTwice: effects the service applied more than once (tier 1 by
 *   idempotency key, so by the service's own dedup);
 * - agentLost: effects whose submit was answered (PROPOSED durable, the agent
 *   was told) that the new primary does not have;
 * - settledLost: effects a relay logged as settled before the kill whose
 *   settling record (written before the kill) the new primary does not have;
 * - onlyOnDead: records on the dead primary (read from its data afterwards)
 *   missing on the new one: those lost, and any committed locally whose
 *   client was never told (a synchronous commit waiting for the standby);
 * - firstDispatchMs: from the kill to the first DISPATCHED record written on
 *   the new primary (timed by the relay that wrote it, after the promotion);
 *   promotedMs: from the kill to the new primary.
 */
import pg from 'pg'
import { expect } from 'vitest'
import { toEffect, type EffectInput } from '../../src/core/effect.js'
import type { HttpService } from './http-service.js'
import { relayReady, startRelayProc, type RelayProc } from './relay-procs.js'
import { interlock } from './cli.js'
import { applications, effectInputs, TIER_OF, type RelayDeployment } from './relay-setup.js'

export interface FailoverRunOptions {
  deploy: RelayDeployment
  service: HttpService
  /** Effects in the backlog before the relays start. */
  backlog: number
  /** The agent's submits, at least this many after the new primary is up. */
  agentAfter: number
  /** Kill once this many effects have settled. */
  killAfter: number
  /** Kills the primary (SIGKILL). */
  kill(): Promise<void>
  /** Until a new primary is up (pg_ctl promote, or Patroni's doing). */
  failover(): Promise<void>
  /** The records (hashes) on the dead primary, read after the run; undefined when it cannot be read. */
  deadRecords?(): Promise<Set<string> | undefined>
  relays?: RelayProc[]
  /** Distinguishes the effects of several runs on one store. */
  prefix: string
  relayArgs?: string[]
}

export interface FailoverFigures {
  submitted: number
  agentSubmitted: number
  appliedTwice: number
  agentLost: number
  settledLost: number
  /** Effects a relay logged settled before the kill. */
  settledBeforeKill: number
  onlyOnDead: number | undefined
  promotedMs: number
  firstDispatchMs: number
  rewoundLines: number
  states: Record<string, number>
  /** Per effect: id, target, state on the new primary, applications at the service. */
  effects: { id: string; target: string; state: string; applied: number }[]
  relayStderr: string
  phases: string
}

const SETTLED = new Set(['committed', 'ambiguous', 'failed', 'rejected'])

export async function failoverRun(o: FailoverRunOptions): Promise<FailoverFigures> {
  const { deploy, service } = o
  const t0 = Date.now()
  const backlog = effectInputs(o.backlog, 64, `${o.prefix}-b`)
  for (let i = 0; i < backlog.length; i += 250) await Promise.all(backlog.slice(i, i + 250).map((e) => deploy.outbox.submit(e)))
  const args = ['--config', deploy.configFile, '--lease-ms', '2000', '--poll-ms', '100', '--concurrency', '16', '--log-format', 'json', ...(o.relayArgs ?? [])]
  const relays = o.relays ?? Array.from({ length: 3 }, (_, i) => startRelayProc(`${o.prefix}-relay-${i}`, args, deploy.dir))
  try {
    const submittedAt = Date.now()
    await Promise.all(relays.map((r) => relayReady(r)))
    const readyAt = Date.now()
    const settledCount = async () => {
      const c = await deploy.store.countByState()
      return c.COMMITTED + c.AMBIGUOUS + c.FAILED + c.REJECTED
    }
    const before = await settledCount()

    // The agent: one input at a time, each retried until a submit is answered.
    const agentInputs: EffectInput[] = []
    const told: string[] = []
    let promotedAt = 0
    let agentDone = false
    const agent = (async () => {
      let n = 0
      let afterPromotion = 0
      while (afterPromotion < o.agentAfter) {
        const input: EffectInput = { thread: `agent-${n % 8}`, target: `t${(n % 3) + 1}`, action: 'charge', args: { n: `${o.prefix}-a-${n}` } }
        n++
        agentInputs.push(input)
        for (;;) {
          try {
            told.push((await deploy.outbox.submit(input)).effectId)
            break
          } catch {
            await new Promise((r) => setTimeout(r, 50))
          }
        }
        if (promotedAt > 0) afterPromotion++
      }
      agentDone = true
    })()

    await until(async () => (await settledCount()) - before >= o.killAfter, 120_000, `${o.killAfter} effects to settle before the kill`, relays)
    const killAt = Date.now()
    await o.kill()
    // Whatever a relay was told before the kill returned, it was told before the server stopped.
    const killIso = new Date().toISOString()
    await o.failover()
    promotedAt = Date.now()
    await agent
    const total = backlog.length + agentInputs.length
    await until(
      async () => {
        const c = await deploy.store.countByState()
        return agentDone && c.PROPOSED + c.AUTHORIZED + c.DISPATCHED === 0
      },
      150_000,
      'every effect to settle on the new primary',
      relays,
    )
    const drainedAt = Date.now()
    for (const r of relays) r.child.kill('SIGTERM')
    const exits = await Promise.all(relays.map((r) => r.exited))
    exits.forEach((e, i) => {
      if (e.code !== 0) throw new Error(`relay ${relays[i]!.id} exited ${e.code ?? e.signal}:\n${relays[i]!.stderr.slice(-3000)}`)
    })

    // The new primary's journal, through the store's own URL (it follows the failover).
    const newRecords = await journal(deploy)
    const states = new Map((await deploy.store.list({})).map((s) => [s.effect.id, s.state]))
    const counts = service.counts()
    const effects = [...backlog, ...agentInputs].map((input) => {
      const id = toEffect(input).id
      return { id, target: input.target, state: states.get(id) ?? 'MISSING', applied: applications(counts, input.target, id) }
    })
    const stateTally: Record<string, number> = {}
    for (const e of effects) stateTally[`${e.target}:${e.state}`] = (stateTally[`${e.target}:${e.state}`] ?? 0) + 1

    // What the relays were told was settled before the kill (their outcome lines), against the new primary.
    const settledBefore = new Set<string>()
    for (const r of relays) {
      for (const line of r.stderr.split('\n')) {
        if (!line.startsWith('{')) continue
        const l = JSON.parse(line) as { event?: string; outcome?: string; effectId?: string; time?: string }
        if (l.event === 'outcome' && l.effectId && SETTLED.has(l.outcome ?? '') && l.time && l.time < killIso) settledBefore.add(l.effectId)
      }
    }
    const settledLost = [...settledBefore].filter((id) => !newRecords.rows.some((r) => r.effect_id === id && r.at < killIso && ['COMMITTED', 'AMBIGUOUS', 'FAILED', 'REJECTED'].includes(r.state))).length

    // Written on the new primary: after it came up (the `at` a relay gave it, on this machine's clock).
    const promotedIso = new Date(promotedAt).toISOString()
    const firstDispatch = newRecords.rows.filter((r) => r.state === 'DISPATCHED' && r.at > promotedIso).map((r) => Date.parse(r.at)).sort((a, b) => a - b)[0]
    const dead = await o.deadRecords?.()
    const stderr = relays.map((r) => r.stderr).join('\n')
    return {
      submitted: total,
      agentSubmitted: agentInputs.length,
      appliedTwice: effects.filter((e) => e.applied > 1).length,
      agentLost: told.filter((id) => !states.has(id)).length,
      settledLost,
      settledBeforeKill: settledBefore.size,
      onlyOnDead: dead && [...dead].filter((h) => !newRecords.hashes.has(h)).length,
      promotedMs: promotedAt - killAt,
      firstDispatchMs: firstDispatch === undefined ? NaN : firstDispatch - killAt,
      rewoundLines: stderr.split('\n').filter((l) => l.includes('"store-rewound"')).length,
      states: stateTally,
      effects,
      relayStderr: stderr,
      phases: `backlog submitted in ${submittedAt - t0} ms, relays ready ${readyAt - submittedAt} ms later, killed ${killAt - readyAt} ms later, all settled ${drainedAt - killAt} ms after the kill`,
    }
  } finally {
    for (const r of relays) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL')
    await Promise.all(relays.map((r) => r.exited))
  }
}

interface RecordRow {
  effect_id: string
  state: string
  at: string
  hash: string
}

/** Every journal record on the store's current primary. */
async function journal(deploy: RelayDeployment): Promise<{ rows: RecordRow[]; hashes: Set<string> }> {
  const { newClient } = await import('../../src/core/stores/postgres/connect.js')
  const url = deploy.config.store.kind === 'postgres' ? deploy.config.store.url : ''
  const c = newClient(url, {})
  await c.connect()
  try {
    const rows = (await c.query<RecordRow>('SELECT effect_id, state, at, hash FROM interlock.journal_records')).rows
    return { rows, hashes: new Set(rows.map((r) => r.hash)) }
  } finally {
    await c.end()
  }
}

/** The record hashes on a server (a dead primary's, read afterwards). */
export async function recordHashes(url: string): Promise<Set<string>> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return new Set((await c.query('SELECT hash FROM interlock.journal_records')).rows.map((r) => r.hash as string))
  } finally {
    await c.end()
  }
}

async function until(cond: () => Promise<boolean>, ms: number, what: string, relays: RelayProc[]): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond().catch(() => false))) {
    const gone = relays.find((r) => r.child.exitCode !== null || r.child.signalCode !== null)
    if (gone) throw new Error(`relay ${gone.id} exited while waiting for ${what}:\n${gone.stderr.slice(-3000)}`)
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; relay stderr:\n${relays.map((r) => r.stderr.slice(-1500)).join('\n')}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export function figuresLine(name: string, f: FailoverFigures): string {
  return (
    `${name}: ${f.submitted} effects submitted (${f.agentSubmitted} by the agent during the run), ${f.appliedTwice} applied twice, ` +
    `${f.agentLost} submits lost, ${f.settledLost} of ${f.settledBeforeKill} effects settled before the kill lost their settling record, ${f.onlyOnDead ?? 'n/a'} records only on the dead primary; ` +
    `new primary ${f.promotedMs} ms after the kill, first dispatch on it ${f.firstDispatchMs} ms after the kill; ` +
    `${f.rewoundLines} store-rewound lines; ${JSON.stringify(f.states)}; ${f.phases}`
  )
}

/**
 * What synchronous replication promises, asserted on a run: nothing the
 * agent or a relay was told is missing, nothing applied twice, every effect
 * COMMITTED and applied once (tier 1 and 2) or COMMITTED once or AMBIGUOUS
 * (tier 3), the fencing tokens never went back, and `outbox verify` (the
 * built CLI) is clean.
 */
export async function expectSafe(name: string, f: FailoverFigures, deploy: RelayDeployment): Promise<void> {
  console.log(figuresLine(name, f))
  expect(f.submitted).toBeGreaterThanOrEqual(1050)
  expect(f.agentLost).toBe(0)
  expect(f.settledLost).toBe(0)
  expect(f.appliedTwice).toBe(0)
  expect(f.rewoundLines).toBe(0)
  for (const e of f.effects) {
    if (TIER_OF[e.target] === 3) {
      expect(['COMMITTED', 'AMBIGUOUS'], `${e.target} ${e.id}`).toContain(e.state)
      expect(e.applied, `${e.target} ${e.id}`).toBeLessThanOrEqual(1)
      if (e.state === 'COMMITTED') expect(e.applied, `${e.target} ${e.id}`).toBe(1)
    } else {
      expect(e.state, `${e.target} ${e.id}`).toBe('COMMITTED')
      expect(e.applied, `${e.target} ${e.id}`).toBe(1)
    }
  }
  expect(f.firstDispatchMs).toBeGreaterThan(0)
  const verify = await interlock(['outbox', 'verify', '--config', deploy.configFile], { cwd: deploy.dir })
  expect(verify.code, verify.stdout + verify.stderr).toBe(0)
}
