import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DispatchFault, InputError, NotFoundError, StoreUnavailableError } from '../../src/core/errors.js'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { CountingTarget } from '../helpers/counting-target.js'

let dir: string
let store: Store
const noSleep = async () => {}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-gate-'))
  store = await openStore({ kind: 'sqlite', path: join(dir, 'journal.db') })
})
afterEach(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

function gateWith(...targets: CountingTarget[]) {
  return new Gate({ store, targets, sleep: noSleep, retry: { maxAttempts: 3, backoffMs: 1 } })
}
const effect = (target: string, n = 1) => ({ thread: 't', target, action: 'do', args: { n } })

async function states(id: string) {
  return (await store.history(id)).map((r) => r.state)
}

describe('gate.submit', () => {
  it('journals PROPOSED, AUTHORIZED, DISPATCHED, COMMITTED around one apply', async () => {
    const t = new CountingTarget('t1', 1)
    const gate = gateWith(t)
    const out = await gate.submit(effect('t1'))
    expect(out.status).toBe('committed')
    expect(t.count(out.effectId)).toBe(1)
    expect(await states(out.effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    if (out.status === 'committed') expect(out.receipt).toEqual({ applied: out.effectId })
  })

  it('two durable commits per effect: PROPOSED, AUTHORIZED, DISPATCHED in one, COMMITTED in the other, each its own record', async () => {
    const commits: string[][] = []
    const counted = new Proxy(store, {
      get: (s, p) =>
        p === 'append'
          ? async (requests: Parameters<Store['append']>[0]) => {
              commits.push(requests.map((r) => r.to))
              return s.append(requests)
            }
          : (Reflect.get(s, p) as unknown),
    })
    const t = new CountingTarget('t1', 1)
    const gate = new Gate({ store: counted, targets: [t], sleep: noSleep })
    const out = await gate.submit(effect('t1'))
    expect(out.status).toBe('committed')
    expect(commits).toEqual([['PROPOSED', 'AUTHORIZED', 'DISPATCHED'], ['COMMITTED']])
    const history = await store.history(out.effectId)
    expect(history.map((r) => [r.seq, r.state])).toEqual([[1, 'PROPOSED'], [2, 'AUTHORIZED'], [3, 'DISPATCHED'], [4, 'COMMITTED']])
    // A stale premise: one commit, PROPOSED, AUTHORIZED, REJECTED.
    commits.length = 0
    t.violations = ['moved']
    expect((await gate.submit(effect('t1', 2))).status).toBe('rejected')
    expect(commits).toEqual([['PROPOSED', 'AUTHORIZED', 'REJECTED']])
  })

  it('checks premises before anything is journaled: one that cannot be read leaves no record, and the same submit later goes through', async () => {
    const t = new CountingTarget('t1', 1)
    const gate = gateWith(t)
    const check = t.validatePremises.bind(t)
    t.validatePremises = async () => {
      throw new Error('premise service down')
    }
    await expect(gate.submit(effect('t1'))).rejects.toThrow(/premise service down/)
    const id = toEffect(effect('t1')).id
    expect(await store.get(id)).toBeUndefined()
    t.validatePremises = check
    const out = await gate.submit(effect('t1'))
    expect(out).toMatchObject({ status: 'committed', effectId: id })
    expect(t.count(id)).toBe(1)
  })

  it('sends nothing before DISPATCHED is durable', async () => {
    const t = new CountingTarget('t1', 1)
    const seen: string[] = []
    t.onApply = async (e) => {
      // A second store handle reads what is on disk, not what this handle cached.
      const other = await openStore({ kind: 'sqlite', path: join(dir, 'journal.db') })
      seen.push((await other.get(e.id))!.state)
      await other.close()
    }
    await gateWith(t).submit(effect('t1'))
    expect(seen).toEqual(['DISPATCHED'])
  })

  it('rejects a stale premise without applying', async () => {
    const t = new CountingTarget('t1', 2)
    t.violations = ['balance changed since the decision']
    const out = await gateWith(t).submit(effect('t1'))
    expect(out).toMatchObject({ status: 'rejected', violations: ['balance changed since the decision'] })
    expect(t.calls.size).toBe(0)
    expect(await states(out.effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'REJECTED'])
  })

  it('applies once when the same effect is submitted twice at once, and once more later: the later one answered by the journal', async () => {
    const t = new CountingTarget('t3', 3)
    const gate = gateWith(t)
    const [a, b] = await Promise.all([gate.submit(effect('t3')), gate.submit(effect('t3'))])
    // The second joined the first: one send, for both.
    expect(a).toEqual(b)
    expect(a).toMatchObject({ status: 'committed', via: 'apply' })
    const c = await gate.submit(effect('t3'))
    expect(c).toEqual({ ...a, via: 'journal', committedBy: 'apply' })
    expect(t.calls.get(a.effectId)).toBe(1)
  })

  it('returns the existing outcome to a second gate on the same journal, saying nothing was sent', async () => {
    const t = new CountingTarget('t3', 3)
    const first = await gateWith(t).submit(effect('t3'))
    const t2 = new CountingTarget('t3', 3)
    const second = await gateWith(t2).submit(effect('t3'))
    expect(first).toMatchObject({ status: 'committed', via: 'apply' })
    expect(second).toEqual({ ...first, via: 'journal', committedBy: 'apply' })
    expect(t2.calls.size).toBe(0)
  })

  it('an effect a tier-2 query found, submitted again: via journal, committed by the query', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'unknown', afterApplying: true }]
    const found = await gateWith(t).submit(effect('t2'))
    expect(found).toMatchObject({ status: 'committed', via: 'query' })
    const again = await gateWith(t).submit(effect('t2'))
    expect(again).toEqual({ ...found, via: 'journal', committedBy: 'query' })
    expect(t.calls.get(found.effectId)).toBe(1)
  })

  it('anything but COMMITTED found in the journal is answered as it stands, with no via', async () => {
    const t = new CountingTarget('t3', 3)
    t.faults = [{ kind: 'refused' }]
    const failed = await gateWith(t).submit(effect('t3'))
    expect(failed).toMatchObject({ status: 'failed' })
    expect(await gateWith(t).submit(effect('t3'))).toEqual(failed)
  })

  it('tier 1: an unknown outcome is retried with the same effect id and lands once', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'unknown', afterApplying: true }, { kind: 'throw' }]
    const out = await gateWith(t).submit(effect('t1'))
    expect(out.status).toBe('committed')
    expect(t.calls.get(out.effectId)).toBe(3)
    expect(t.count(out.effectId)).toBe(1)
  })

  it('tier 2: an unknown outcome is settled by asking the target', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'unknown', afterApplying: true }]
    const out = await gateWith(t).submit(effect('t2'))
    expect(out).toMatchObject({ status: 'committed', via: 'query' })
    expect(t.count(out.effectId)).toBe(1)
    expect(t.calls.get(out.effectId)).toBe(1)
  })

  it('tier 2: not found after an unknown outcome, it applies again', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'unknown' }]
    const out = await gateWith(t).submit(effect('t2'))
    expect(out).toMatchObject({ status: 'committed', via: 'apply' })
    expect(t.count(out.effectId)).toBe(1)
    expect(t.queries).toEqual([out.effectId])
  })

  it('tier 3: an unknown outcome is AMBIGUOUS and never resent', async () => {
    const t = new CountingTarget('t3', 3)
    t.faults = [{ kind: 'throw', afterApplying: true }]
    const out = await gateWith(t).submit(effect('t3'))
    expect(out.status).toBe('ambiguous')
    expect(t.calls.get(out.effectId)).toBe(1)
    expect(await states(out.effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AMBIGUOUS'])
  })

  it('resends what was never sent, whatever the tier', async () => {
    const t = new CountingTarget('t3', 3)
    t.faults = [{ kind: 'not-sent' }, { kind: 'retry-later', retryAfterMs: 1 }]
    const out = await gateWith(t).submit(effect('t3'))
    expect(out.status).toBe('committed')
    expect(t.count(out.effectId)).toBe(1)
  })

  it('tier 2: a query that fails is asked again, never answered by applying blindly', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'unknown', afterApplying: true }]
    const real = t.query!
    let failures = 2
    t.query = async (e) => {
      if (failures-- > 0) throw new Error('query endpoint down')
      return real(e)
    }
    const out = await gateWith(t).submit(effect('t2'))
    expect(out).toMatchObject({ status: 'committed', via: 'query' })
    expect(t.calls.get(out.effectId)).toBe(1)
    expect(t.count(out.effectId)).toBe(1)
  })

  it('tier 2: when the target cannot be asked at all, the effect stays in flight for recovery', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'unknown', afterApplying: true }]
    t.query = async () => {
      throw new Error('query endpoint down')
    }
    const out = await gateWith(t).submit(effect('t2'))
    expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })
    expect(t.calls.get(out.effectId)).toBe(1)
  })

  it('a target that cannot know whether it happened: AMBIGUOUS at tier 1, never sent again', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'unknowable', afterApplying: true }]
    const out = await gateWith(t).submit(effect('t1'))
    expect(out).toMatchObject({ status: 'ambiguous', reason: 'injected unknowable' })
    expect(t.calls.get(out.effectId)).toBe(1)
    expect(await states(out.effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AMBIGUOUS'])
  })

  it('tier 2: a query that answers it cannot know is AMBIGUOUS, in the loop and on the last look, never applied again', async () => {
    for (const maxAttempts of [3, 1]) {
      const t = new CountingTarget(`t2-${maxAttempts}`, 2)
      t.faults = [{ kind: 'unknown', afterApplying: true }]
      t.query = async () => {
        throw new DispatchFault('unknowable', 'another writer replaced the object')
      }
      const gate = new Gate({ store, targets: [t], sleep: noSleep, retry: { maxAttempts, backoffMs: 1 } })
      const out = await gate.submit(effect(`t2-${maxAttempts}`))
      expect(out).toMatchObject({ status: 'ambiguous', reason: 'another writer replaced the object' })
      expect(t.calls.get(out.effectId)).toBe(1)
    }
  })

  it('recovery of a DISPATCHED tier-2 effect whose query cannot know: marked ambiguous', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'unknown', afterApplying: true }]
    t.query = async () => {
      throw new Error('query endpoint down')
    }
    const out = await new Gate({ store, targets: [t], sleep: noSleep, retry: { maxAttempts: 1, backoffMs: 1 } }).submit(effect('t2'))
    expect(out).toMatchObject({ status: 'in_flight' })
    t.query = async () => {
      throw new DispatchFault('unknowable', 'cannot know')
    }
    const report = await gateWith(t).recover()
    expect(report.effects).toMatchObject([{ effectId: out.effectId, found: 'DISPATCHED', action: 'marked-ambiguous', outcome: { status: 'ambiguous', reason: 'cannot know' } }])
    expect(t.calls.get(out.effectId)).toBe(1)
  })

  it('a definite refusal is FAILED; a pushed-down premise is REJECTED', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'refused' }, { kind: 'premise' }]
    const gate = gateWith(t)
    expect(await gate.submit(effect('t2', 1))).toMatchObject({ status: 'failed', reason: 'injected refused' })
    expect(await gate.submit(effect('t2', 2))).toMatchObject({ status: 'rejected', violations: ['injected premise'] })
  })

  it('leaves an effect in flight when tries run out, and recovery finishes it once', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'unknown' }, { kind: 'unknown' }, { kind: 'unknown', afterApplying: true }]
    const gate = gateWith(t)
    const out = await gate.submit(effect('t1'))
    expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ effectId: out.effectId, action: 're-applied', outcome: { status: 'committed' } }])
    expect(t.count(out.effectId)).toBe(1)
  })

  it('holds what policy holds, without dispatching', async () => {
    const t = new CountingTarget('t1', 1)
    const gate = new Gate({ store, targets: [t], policy: { evaluate: () => ({ rule: 'big-refunds' }) } })
    const out = await gate.submit(effect('t1'))
    expect(out).toEqual({ status: 'held', effectId: out.effectId, rule: 'big-refunds' })
    expect(t.calls.size).toBe(0)
    expect((await gate.recover()).effects).toMatchObject([{ action: 'waiting', found: 'HELD' }])
  })

  it('dispatches nothing when DISPATCHED cannot be made durable', async () => {
    const t = new CountingTarget('t1', 1)
    const failing: Store = Object.create(store)
    failing.append = async (reqs) => {
      if (reqs.some((r) => r.to === 'DISPATCHED')) throw new StoreUnavailableError('disk full')
      return store.append(reqs)
    }
    const gate = new Gate({ store: failing, targets: [t] })
    await expect(gate.submit(effect('t1'))).rejects.toThrow('disk full')
    expect(t.calls.size).toBe(0)
  })

  it('refuses bad arguments before journaling anything', async () => {
    const t = new CountingTarget('t1', 1)
    t.validateArgs = (_action, args) => {
      if (typeof args.n !== 'number') throw new InputError('args.n must be a number')
    }
    const gate = gateWith(t)
    await expect(gate.submit({ thread: 't', target: 't1', action: 'do', args: { n: 'x' } })).rejects.toThrow('args.n must be a number')
    expect(await store.list()).toEqual([])
    expect(t.calls.size).toBe(0)
  })

  it('refuses a tier-2 target without query, and an unknown target', async () => {
    const t = new CountingTarget('t2', 2)
    delete t.query
    expect(() => gateWith(t)).toThrow(InputError)
    expect(() => gateWith(t)).toThrow(/tier-2 target must implement query/)
    await expect(gateWith().submit(effect('nope'))).rejects.toThrow(NotFoundError)
    await expect(gateWith().submit({ ...effect('nope'), thread: '' })).rejects.toThrow(/effect\.thread/)
  })
})

describe('targets whose tier is per action', () => {
  it('journals each effect with the tier its action has, and recovers it by that tier', async () => {
    const t = new CountingTarget('tools', 3)
    t.tierOf = (action) => (action === 'append_line' ? 3 : action === 'put' ? 1 : 2)
    t.query = async (e) => (t.applied.has(e.id) ? { found: e.id } : null)
    t.faults = [{ kind: 'unknown', afterApplying: true }, { kind: 'unknown', afterApplying: true }]
    const gate = new Gate({ store, targets: [t], sleep: noSleep, retry: { maxAttempts: 1, backoffMs: 1 } })
    const put = await gate.submit({ thread: 't', target: 'tools', action: 'put', args: {} })
    const append = await gate.submit({ thread: 't', target: 'tools', action: 'append_line', args: {} })
    expect((await store.get(put.effectId))!.tier).toBe(1)
    expect((await store.get(append.effectId))!.tier).toBe(3)
    // Tier 1 stays in flight to be sent again; tier 3 is AMBIGUOUS at once.
    expect(put).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })
    expect(append).toMatchObject({ status: 'ambiguous' })
    const report = await gate.recover()
    expect(report.effects.find((e) => e.effectId === put.effectId)).toMatchObject({ tier: 1, action: 're-applied', outcome: { status: 'committed' } })
    expect(report.effects.find((e) => e.effectId === append.effectId)).toMatchObject({ tier: 3, action: 'waiting' })
  })

  it('refuses an action whose tier is 2 on a target that cannot be asked', async () => {
    const t = new CountingTarget('tools', 3)
    t.tierOf = () => 2
    await expect(gateWith(t).submit(effect('tools'))).rejects.toThrow(/action do is tier 2, but the target cannot be asked/)
    expect(await store.list()).toEqual([])
  })

  it('takes actions and threads spelt with an underscore, as MCP tool names are', async () => {
    const t = new CountingTarget('t1', 1)
    const out = await gateWith(t).submit({ thread: 'mcp_session', target: 't1', action: 'edit_file', args: {} })
    expect(out.status).toBe('committed')
  })

  it('journals what the target answered with a definite refusal, and reports it', async () => {
    const t = new CountingTarget('t1', 3)
    const answer = { content: [{ type: 'text', text: 'no such file' }], isError: true }
    t.apply = async () => {
      throw new DispatchFault('refused', 'the tool said no', { answer })
    }
    const out = await gateWith(t).submit(effect('t1'))
    expect(out).toEqual({ status: 'failed', effectId: out.effectId, reason: 'the tool said no', answer })
    expect((await store.history(out.effectId)).at(-1)!.data).toEqual({ reason: 'the tool said no', answer })
  })
})

describe('gate.recover', () => {
  async function journalAt(state: 'PROPOSED' | 'AUTHORIZED' | 'DISPATCHED', t: CountingTarget) {
    const gate = gateWith(t)
    const path: ('AUTHORIZED' | 'DISPATCHED')[] = state === 'PROPOSED' ? [] : state === 'AUTHORIZED' ? ['AUTHORIZED'] : ['AUTHORIZED', 'DISPATCHED']
    const { toEffect } = await import('../../src/core/effect.js')
    const { proposal } = await import('../../src/core/gate-context.js')
    const e = toEffect(effect(t.name))
    await store.append([{ effectId: e.id, from: null, to: 'PROPOSED', data: proposal(e, t.tier), effect: e, tier: t.tier }])
    let from: 'PROPOSED' | 'AUTHORIZED' = 'PROPOSED'
    for (const to of path) {
      await store.append([{ effectId: e.id, from, to, data: {} }])
      from = to as 'AUTHORIZED'
    }
    return { gate, id: e.id }
  }

  it.each([1, 2, 3] as const)('continues PROPOSED and AUTHORIZED effects on tier %i, premises re-checked', async (tier) => {
    for (const state of ['PROPOSED', 'AUTHORIZED'] as const) {
      const t = new CountingTarget(`t${tier}${state}`, tier)
      const { gate, id } = await journalAt(state, t)
      const report = await gate.recover()
      expect(report.effects).toMatchObject([{ effectId: id, found: state, action: 'resumed', outcome: { status: 'committed' } }])
      expect(t.count(id)).toBe(1)
    }
  })

  it('DISPATCHED, tier 1: re-applies with the same key', async () => {
    const t = new CountingTarget('t1', 1)
    const { gate, id } = await journalAt('DISPATCHED', t)
    t.applied.set(id, 1) // it had landed before the crash
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ action: 're-applied', outcome: { status: 'committed' } }])
    expect(t.calls.get(id)).toBe(1)
    expect(t.count(id)).toBe(1)
  })

  it('DISPATCHED, tier 2: found by query, not applied again', async () => {
    const t = new CountingTarget('t2', 2)
    const { gate, id } = await journalAt('DISPATCHED', t)
    t.applied.set(id, 1)
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ action: 'found-by-query', outcome: { status: 'committed', via: 'query' } }])
    expect(t.calls.size).toBe(0)
  })

  it('DISPATCHED, tier 2: not found, applied once', async () => {
    const t = new CountingTarget('t2', 2)
    const { gate, id } = await journalAt('DISPATCHED', t)
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ action: 'applied-after-query', outcome: { status: 'committed' } }])
    expect(t.count(id)).toBe(1)
  })

  it('DISPATCHED, tier 3: AMBIGUOUS, never resent; a second recovery leaves it waiting', async () => {
    const t = new CountingTarget('t3', 3)
    const { gate, id } = await journalAt('DISPATCHED', t)
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ action: 'marked-ambiguous', outcome: { status: 'ambiguous' } }])
    expect(t.calls.size).toBe(0)
    expect((await gate.recover()).effects).toMatchObject([{ effectId: id, action: 'waiting', found: 'AMBIGUOUS' }])
  })

  it("leaves terminal effects alone, and reads only the in-flight one's records, not the settled ones in its journal", async () => {
    const t = new CountingTarget('t1', 1)
    const gate = gateWith(t)
    for (let i = 0; i < 5; i++) await gate.submit(effect('t1', i))
    const quiet = await gate.recover()
    expect(quiet.effects).toEqual([])
    expect(t.calls.size).toBe(5)
    t.faults = [{ kind: 'unknown' }, { kind: 'unknown' }, { kind: 'unknown' }]
    const stuck = await gate.submit(effect('t1', 99))
    expect(stuck.status).toBe('in_flight')
    const report = await gate.recover()
    expect(report.effects.map((e) => e.effectId)).toEqual([stuck.effectId])
    // The five committed effects (4 records each) share its journal; only the stuck one's 3 records are read.
    expect(report.recordsRead).toBe(3)
  })
})
