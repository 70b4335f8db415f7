/**
 * Releases stranded by a crash, on a real store of each kind: the release
 * that completes a quorum is journaled (HELD → HELD) but the process dies
 * before HELD → AUTHORIZED. Recovery (gate.recover, reconcile-effects)
 * authorizes it from the recorded releases and dispatches it once; without
 * a valid quorum it waits for operators and says why. The process's death is
 * simulated here by a store that refuses the AUTHORIZED append; the real
 * SIGKILL is in test/e2e/outbox-crash.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { Clock } from '../../../src/core/clock.js'
import type { OperatorConfig, PolicyRuleConfig } from '../../../src/core/config/types.js'
import { effectDigest } from '../../../src/core/crypto/digest.js'
import { generateKeyPair, type KeyPair } from '../../../src/core/crypto/keys.js'
import { signStatement } from '../../../src/core/crypto/sign.js'
import { signedJson } from '../../../src/core/crypto/statements.js'
import { Gate } from '../../../src/core/gate.js'
import type { OperatorContext } from '../../../src/core/outbox/operator-context.js'
import { denyEffect, releaseEffect } from '../../../src/core/outbox/release.js'
import { verifyStore } from '../../../src/core/outbox/verify-sources.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { reconcileEffects } from '../../../src/core/reconcile/reconcile.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'

const HOUR = 3_600_000
const RULE: PolicyRuleConfig = { name: 'large-refunds', target: 'payments', when: [{ arg: 'amount', above: '500.00' }], quorum: 2, releaseTtlMs: HOUR }
const policy = new RulesPolicy([RULE])
const keys: Record<string, KeyPair> = Object.fromEntries(['alice', 'bob', 'carol'].map((n) => [n, generateKeyPair('operator', n)]))
const operators: OperatorConfig[] = ['alice', 'bob', 'carol'].map((n) => ({ name: n, publicKey: keys[n]!.publicKey }))
const releases = { operators }

afterAll(() => dropOutboxDatabase())

/** A clock the test moves; the store stamps records with it and operators sign with it. */
function movableClock(start = Date.UTC(2030, 0, 1)): Clock & { advance(ms: number): void } {
  let t = start
  return { now: () => new Date(t++), advance: (ms) => void (t += ms) }
}

/** The store as a process that dies right after the completing release: the AUTHORIZED append never happens. */
function diesBeforeAuthorized(store: Store): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'append') {
        return (requests: Parameters<Store['append']>[0]) =>
          requests.some((r) => r.to === 'AUTHORIZED') ? Promise.reject(new Error('killed before AUTHORIZED')) : target.append(requests)
      }
      return Reflect.get(target, prop, receiver)
    },
  })
}

interface World {
  h: OutboxHarness
  store: Store
  gate: Gate
  payments: CountingTarget
  clock: ReturnType<typeof movableClock>
  ctx(who: string, store?: Store): OperatorContext
  held(amount: string): Promise<string>
  close(): Promise<void>
}

async function world(make: () => Promise<OutboxHarness>): Promise<World> {
  const h = await make()
  const clock = movableClock()
  const store = await openStore(h.config, { clock })
  const payments = new CountingTarget('payments', 1)
  const gate = new Gate({ store, targets: [payments], policy, retry: { maxAttempts: 1, backoffMs: 0 } })
  return {
    h,
    store,
    gate,
    payments,
    clock,
    ctx: (who, s = store) => ({ store: s, operators, policy, key: keys[who]!, clock }),
    held: async (amount) => {
      const o = await gate.submit({ thread: `agent-${amount}`, target: 'payments', action: 'refund', args: { amount }, premises: { charge: 'ch_1' } })
      expect(o.status).toBe('held')
      return o.effectId
    },
    close: async () => {
      await gate.close()
      await store.close()
      await h.dispose()
    },
  }
}

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
])('stranded releases on %s', (_kind, make) => {
  it('a quorum completed before the crash: recovery authorizes it, dispatches it once, and verify agrees', async () => {
    const w = await world(make)
    try {
      const id = await w.held('900.00')
      await releaseEffect(w.ctx('alice'), id)
      await expect(releaseEffect(w.ctx('bob', diesBeforeAuthorized(w.store)), id)).rejects.toThrow(/killed before AUTHORIZED/)
      expect(await w.store.get(id)).toMatchObject({ state: 'HELD' })

      // Without the trusted operators, recovery cannot judge the releases: it waits.
      expect((await w.gate.recover()).effects).toMatchObject([{ effectId: id, plan: 'wait', action: 'waiting' }])
      const dry = await w.gate.recover({ releases, dryRun: true })
      expect(dry.effects).toMatchObject([{ effectId: id, found: 'HELD', plan: 'authorize', action: 'planned', quorum: { have: 2, need: 2, signers: ['alice', 'bob'] } }])
      expect(await w.store.get(id)).toMatchObject({ state: 'HELD' })

      const report = await w.gate.recover({ releases })
      expect(report.effects).toMatchObject([{ effectId: id, plan: 'authorize', action: 'authorized', outcome: { status: 'committed' } }])
      expect(w.payments.applied.get(id)).toBe(1)
      const history = await w.store.history(id)
      expect(history.map((r) => r.state)).toEqual(['PROPOSED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
      expect(history[4]!.data).toMatchObject({ rule: 'large-refunds', signers: ['alice', 'bob'], recovered: { quorumSeq: history[3]!.seq, quorumAt: history[3]!.at } })
      expect(await verifyStore(w.store, { operators, policy })).toMatchObject({ ok: true, problems: [] })

      expect((await w.gate.recover({ releases })).effects).toEqual([])
      expect(w.payments.applied.get(id)).toBe(1)
    } finally {
      await w.close()
    }
  })

  it('expiry is judged when the quorum formed: hours later it still counts; releases that never overlapped never do', async () => {
    const w = await world(make)
    try {
      const formed = await w.held('901.00')
      await releaseEffect(w.ctx('alice'), formed)
      w.clock.advance(HOUR / 2)
      await expect(releaseEffect(w.ctx('bob', diesBeforeAuthorized(w.store)), formed)).rejects.toThrow()

      const never = await w.held('902.00')
      await releaseEffect(w.ctx('alice'), never)
      w.clock.advance(2 * HOUR)
      // Alice's release expired before Bob's was journaled: `outbox release` itself would not have authorized.
      const late = await releaseEffect(w.ctx('bob'), never)
      expect(late.state).toBe('HELD')

      w.clock.advance(5 * HOUR)
      const report = await w.gate.recover({ releases })
      const by = new Map(report.effects.map((e) => [e.effectId, e]))
      expect(by.get(formed)).toMatchObject({ action: 'authorized', outcome: { status: 'committed' } })
      expect(by.get(never)).toMatchObject({ plan: 'wait', action: 'waiting', quorum: { have: 1, need: 2 } })
      expect(by.get(never)!.quorum!.reasons!.join('\n')).toMatch(/release 1 by alice: it expired at/)
      expect(w.payments.applied.get(formed)).toBe(1)
      expect(w.payments.calls.has(never)).toBe(false)
      expect(await verifyStore(w.store, { operators, policy })).toMatchObject({ ok: true })

      // Written by hand anyway, the authorization of releases that never overlapped is caught by verify.
      const carried = (await w.store.history(never)).flatMap((r) => (r.data.release ? [r.data.release] : []))
      expect((await w.store.append([{ effectId: never, from: 'HELD', to: 'AUTHORIZED', data: { rule: RULE.name, releases: carried, signers: ['alice', 'bob'] } }]))[0]!.ok).toBe(true)
      const forged = await verifyStore(w.store, { operators, policy })
      expect(forged.ok).toBe(false)
      expect(forged.firstBad!.message).toMatch(/authorizes a held effect with 1 valid release unexpired when the last was journaled; rule "large-refunds" needs 2/)
    } finally {
      await w.close()
    }
  })

  it('waits, saying why, below quorum, for an operator no longer trusted, a replayed release, or a release for other args', async () => {
    const w = await world(make)
    try {
      const below = await w.held('903.00')
      await releaseEffect(w.ctx('alice'), below)

      const untrusted = await w.held('904.00')
      await releaseEffect(w.ctx('alice'), untrusted)
      await expect(releaseEffect(w.ctx('carol', diesBeforeAuthorized(w.store)), untrusted)).rejects.toThrow()

      // The same signed release journaled twice (a replay), and one signed for another digest.
      const forged = await w.held('905.00')
      const snap = (await w.store.get(forged))!
      const sign = (who: string, digest: string, nonce: string) =>
        signedJson(signStatement({ kind: 'release', effectId: forged, digest, operator: who, rule: RULE.name, signedAt: w.clock.now().toISOString(), expiresAt: new Date(w.clock.now().getTime() + HOUR / 2).toISOString(), nonce }, keys[who]!.seed))
      const aliceOnce = sign('alice', effectDigest(snap.effect), 'n-alice')
      for (const release of [aliceOnce, aliceOnce, sign('bob', 'f'.repeat(64), 'n-bob')]) {
        expect((await w.store.append([{ effectId: forged, from: 'HELD', to: 'HELD', data: { rule: RULE.name, release } }]))[0]!.ok).toBe(true)
      }

      // Carol signed, then left: the config that recovery reads no longer trusts her.
      const report = await w.gate.recover({ releases: { operators: operators.filter((o) => o.name !== 'carol') } })
      const why = (id: string) => report.effects.find((e) => e.effectId === id)!.quorum!.reasons!.join('\n')
      expect(report.effects.every((e) => e.plan === 'wait' && e.action === 'waiting')).toBe(true)
      expect(why(below)).toMatch(/below quorum: 1 of 2/)
      expect(why(untrusted)).toMatch(/"carol" is not a trusted operator/)
      expect(why(forged)).toMatch(/nonce was already used: a replayed statement/)
      expect(why(forged)).toMatch(/release 3 by bob: it was signed for digest ffffffffffff/)
      expect(report.counts).toEqual({ held: 3 })
      expect(w.payments.calls.size).toBe(0)
      for (const id of [below, untrusted, forged]) expect((await w.store.get(id))!.state).toBe('HELD')
    } finally {
      await w.close()
    }
  })

  it('a denial after the stranded quorum wins: REJECTED, and recovery leaves it alone', async () => {
    const w = await world(make)
    try {
      const id = await w.held('906.00')
      await releaseEffect(w.ctx('alice'), id)
      await expect(releaseEffect(w.ctx('bob', diesBeforeAuthorized(w.store)), id)).rejects.toThrow()
      await denyEffect(w.ctx('carol'), id, 'wrong customer')
      expect((await w.gate.recover({ releases })).effects).toEqual([])
      expect(await w.store.get(id)).toMatchObject({ state: 'REJECTED' })
      expect(w.payments.calls.size).toBe(0)
      expect(await verifyStore(w.store, { operators, policy })).toMatchObject({ ok: true })
    } finally {
      await w.close()
    }
  })

  it('an operator who acts between the plan of recovery and its write wins: recovery reports moved-on and sends nothing', async () => {
    const w = await world(make)
    try {
      const id = await w.held('909.00')
      await releaseEffect(w.ctx('alice'), id)
      await expect(releaseEffect(w.ctx('bob', diesBeforeAuthorized(w.store)), id)).rejects.toThrow()
      const report = await w.gate.recover({ releases, onChosen: async () => void (await denyEffect(w.ctx('carol'), id, 'changed my mind')) })
      expect(report.effects).toMatchObject([{ effectId: id, plan: 'authorize', action: 'moved-on', outcome: { status: 'rejected' } }])
      expect(w.payments.calls.size).toBe(0)
      expect((await w.store.history(id)).map((r) => r.state)).toEqual(['PROPOSED', 'HELD', 'HELD', 'HELD', 'REJECTED'])
    } finally {
      await w.close()
    }
  })

  it('reconcile-effects authorizes under its own lease and gives back the held effects that wait', async () => {
    const w = await world(make)
    try {
      const stranded = await w.held('907.00')
      await releaseEffect(w.ctx('alice'), stranded)
      await expect(releaseEffect(w.ctx('bob', diesBeforeAuthorized(w.store)), stranded)).rejects.toThrow()
      const waiting = await w.held('908.00')
      // While reconcile sends the stranded effect, a relay claiming HELD or ready effects gets none of those reconcile acts on.
      let claimed: string[] = []
      w.payments.onApply = async () => {
        claimed = (await w.store.claim({ relay: 'relay-x', limit: 10, leaseMs: 60_000, states: ['HELD', 'AUTHORIZED', 'DISPATCHED'] })).map((c) => c.snapshot.effect.id)
      }
      const result = await reconcileEffects({ store: w.store, storeConfig: w.h.config, targets: [w.payments], policy, operators, olderThanMs: 0, concurrency: 1 })
      expect(result).toMatchObject({ status: 'clean', exitCode: 0, waiting: { held: 1, ambiguous: 0 } })
      expect(result.message).toMatch(/1 HELD effect waiting for operators' releases/)
      expect(result.report!.effects.find((e) => e.effectId === stranded)).toMatchObject({ action: 'authorized', outcome: { status: 'committed' } })
      expect(w.payments.applied.get(stranded)).toBe(1)
      // The waiting one was given back before the work began; the stranded one stayed reconcile's.
      expect(claimed).toEqual([waiting])
    } finally {
      await w.close()
    }
  })
})
