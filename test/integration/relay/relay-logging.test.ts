/**
 * What the relay logs, as journald and log shippers take it: one line per
 * effect outcome, and one per retry, lost lease, fence, refusal and return,
 * each (with `logFormat: 'json'`) one JSON object with the time, level,
 * event, relay, effect id, target, state or outcome and reason.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay, type RelayOptions } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'

const key = generateKeyPair('relay', 'relay-log-test')
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-relay-log-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let n = 0
async function open(): Promise<Store> {
  return openStore({ kind: 'sqlite', path: join(dir, `log-${++n}.db`) })
}

type Line = Record<string, unknown>

function relay(store: Store, targets: CountingTarget[], lines: string[], over: Partial<RelayOptions> = {}): Relay {
  return new Relay({
    store,
    targets,
    relayId: 'log-relay',
    key,
    policy: new RulesPolicy([]),
    pollMs: 20,
    leaseMs: 5_000,
    retry: { maxAttempts: 3, backoffMs: 5, maxWaitMs: 1_000 },
    logFormat: 'json',
    log: (l) => lines.push(l),
    ...over,
  })
}

const parsed = (lines: string[]): Line[] => lines.map((l) => JSON.parse(l) as Line)

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('relay log lines', () => {
  it('one JSON line per outcome (committed, failed, ambiguous, rejected, returned) and per retry, each naming relay, effect, target, state and reason', async () => {
    const store = await open()
    const flaky = new CountingTarget('flaky', 1)
    flaky.faults = [{ kind: 'not-sent' }]
    const refusing = new CountingTarget('refusing', 1)
    refusing.faults = [{ kind: 'refused' }]
    const blind = new CountingTarget('blind', 3)
    blind.faults = [{ kind: 'unknown' }]
    const moved = new CountingTarget('moved', 2)
    moved.violations = ['balance changed']
    const limited = new CountingTarget('limited', 1)
    limited.faults = [{ kind: 'retry-later', retryAfterMs: 60_000 }]
    const targets = [flaky, refusing, blind, moved, limited]
    const outbox = new Outbox({ store, targets })
    const ids = new Map<string, string>()
    for (const t of targets) ids.set(t.name, (await outbox.submit({ thread: 'agent', target: t.name, action: 'do', args: { t: t.name } })).effectId)
    const lines: string[] = []
    const r = relay(store, targets, lines)
    await r.start()
    await until(() => parsed(lines).filter((l) => l.event === 'outcome' || l.event === 'returned').length === 5)
    await r.stop()

    const all = parsed(lines)
    for (const l of all) {
      expect(Number.isNaN(Date.parse(String(l.time))), JSON.stringify(l)).toBe(false)
      expect(['info', 'warn', 'error']).toContain(l.level)
      expect(l.relay).toBe('log-relay')
      expect(typeof l.event).toBe('string')
      expect(typeof l.msg).toBe('string')
    }
    const outcomeOf = (target: string) => {
      const found = all.filter((l) => (l.event === 'outcome' || l.event === 'returned') && l.effectId === ids.get(target))
      expect(found, target).toHaveLength(1)
      expect(found[0]!.target).toBe(target)
      return found[0]!
    }
    expect(outcomeOf('flaky')).toMatchObject({ event: 'outcome', level: 'info', outcome: 'committed', state: 'COMMITTED' })
    expect(outcomeOf('refusing')).toMatchObject({ event: 'outcome', level: 'warn', outcome: 'failed', state: 'FAILED', reason: 'injected refused' })
    expect(outcomeOf('blind')).toMatchObject({ event: 'outcome', level: 'warn', outcome: 'ambiguous', state: 'AMBIGUOUS' })
    expect(String(outcomeOf('blind').reason)).toContain('injected unknown')
    expect(outcomeOf('moved')).toMatchObject({ event: 'outcome', outcome: 'rejected', state: 'REJECTED', reason: 'balance changed' })
    const returned = outcomeOf('limited')
    expect(returned).toMatchObject({ event: 'returned', outcome: 'in_flight', state: 'AUTHORIZED' })
    expect(Date.parse(String(returned.notBefore)) - Date.now()).toBeGreaterThan(30_000)

    const retries = all.filter((l) => l.event === 'retry')
    expect(retries).toHaveLength(1)
    expect(retries[0]).toMatchObject({ effectId: ids.get('flaky'), target: 'flaky', attempt: 1, maxAttempts: 3, reason: 'injected not-sent', level: 'warn' })
    expect(all[0]).toMatchObject({ event: 'started' })
    expect(all.at(-1)).toMatchObject({ event: 'stopped', finished: 5 })
    await outbox.close()
    await store.close()
  })

  it('a lease that runs out while a request waits to be written: a lease-lost line and a fenced line for the effect, nothing sent', async () => {
    const store = await open()
    let clock = 0
    const t = new CountingTarget('slow', 2)
    // The process "stops" between the lease check before apply and the write: the fence in the target says no.
    t.onApply = () => {
      clock = 1_000_000
    }
    const outbox = new Outbox({ store, targets: [t] })
    const h = await outbox.submit({ thread: 'agent', target: 'slow', action: 'do', args: {} })
    const lines: string[] = []
    const r = relay(store, [t], lines, { monotonic: () => clock, leaseMs: 60_000 })
    await r.start()
    await until(() => parsed(lines).some((l) => l.event === 'fenced'))
    await r.stop()
    expect(t.count(h.effectId)).toBe(0)
    const about = parsed(lines).filter((l) => l.effectId === h.effectId)
    // Not an outcome of this relay's: the relay that holds the lease now finishes it and logs that.
    expect(about.map((l) => l.event)).toEqual(['lease-lost', 'fenced', 'taken-over'])
    expect(about[0]).toMatchObject({ level: 'warn', target: 'slow' })
    expect(about[1]).toMatchObject({ level: 'warn', target: 'slow' })
    expect(about[2]).toMatchObject({ level: 'info', target: 'slow', state: 'DISPATCHED' })
    await outbox.close()
    await store.close()
  })

  it.each([
    ['stalled before its request', 'before'],
    ['stalled after its request landed, before its commit', 'after'],
  ] as const)('an effect two relays worked on, the first %s, its lease taken over: one outcome line, by the relay that settled it', async (_, when) => {
    const path = join(dir, `takeover-${when}.db`)
    const storeA = await openStore({ kind: 'sqlite', path })
    const storeB = await openStore({ kind: 'sqlite', path })
    let resume!: () => void
    const resumed = new Promise<void>((r) => (resume = r))
    let stalled!: () => void
    const stalledNow = new Promise<void>((r) => (stalled = r))
    const stall = async () => {
      stalled()
      await resumed
    }
    // Relay A's try stalls (a long GC pause, a stopped VM) once; relay B's goes straight through.
    const a = new CountingTarget('svc', 1)
    const b = new CountingTarget('svc', 1)
    if (when === 'before') a.onApply = stall
    else {
      const apply = a.apply.bind(a)
      a.apply = async (effect, ctx) => {
        const receipt = await apply(effect, ctx)
        await stall()
        return receipt
      }
    }
    const outbox = new Outbox({ store: storeA, targets: [a] })
    const h = await outbox.submit({ thread: 'agent', target: 'svc', action: 'do', args: { n: 1 } })
    const linesA: string[] = []
    const linesB: string[] = []
    const relayA = relay(storeA, [a], linesA, { relayId: 'relay-a' })
    const relayB = relay(storeB, [b], linesB, { relayId: 'relay-b' })
    await relayA.start()
    await stalledNow
    // A's lease runs out while it stalls: what the store sees of a relay that stopped renewing.
    const db = new Database(path)
    db.prepare('UPDATE effects SET lease_expires = 0 WHERE id = ?').run(h.effectId)
    db.close()
    await relayB.start()
    await until(() => parsed(linesB).some((l) => l.event === 'outcome' && l.effectId === h.effectId))
    resume()
    await until(() => parsed(linesA).some((l) => l.effectId === h.effectId && (l.event === 'taken-over' || l.event === 'outcome')))
    await relayA.stop()
    await relayB.stop()

    const outcomes = [...parsed(linesA), ...parsed(linesB)].filter((l) => l.event === 'outcome' && l.effectId === h.effectId)
    expect(outcomes).toEqual([expect.objectContaining({ relay: 'relay-b', outcome: 'committed', state: 'COMMITTED' })])
    expect(parsed(linesA).find((l) => l.effectId === h.effectId && l.event === 'taken-over')).toMatchObject({ relay: 'relay-a', state: 'COMMITTED', level: 'info' })
    expect((await storeA.get(h.effectId))!.state).toBe('COMMITTED')
    await outbox.close()
    await storeA.close()
    await storeB.close()
  })

  it('text form: the same events as one readable line each, prefixed with the relay', async () => {
    const store = await open()
    const t = new CountingTarget('t1', 1)
    const outbox = new Outbox({ store, targets: [t] })
    const h = await outbox.submit({ thread: 'agent', target: 't1', action: 'do', args: {} })
    const lines: string[] = []
    const r = relay(store, [t], lines, { logFormat: 'text' })
    await r.start()
    await h.result()
    await until(() => lines.some((l) => l.includes(h.effectId)))
    await r.stop()
    expect(lines).toContain(`relay log-relay: effect ${h.effectId} on t1 committed`)
    expect(lines.every((l) => l.startsWith('relay log-relay: '))).toBe(true)
    await outbox.close()
    await store.close()
  })
})
