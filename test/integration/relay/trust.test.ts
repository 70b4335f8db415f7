/**
 * The relay as the trusted side of the outbox, on a real SQLite file and on
 * PostgreSQL, against someone with write access to the database: agents only
 * propose, the relay holds by its own policy, sends exactly the journaled
 * PROPOSED record's args and premises, and checks a held effect's releases
 * itself. Rows are edited with raw SQL and records forged through the
 * store's own append (their chain is then correct), or rewritten with the
 * chain recomputed, as such a person could; each attack must end with
 * nothing sent to the target and no transition the lifecycle forbids.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { canonicalJson, type JsonObject } from '../../../src/core/canonical-json.js'
import { systemClock } from '../../../src/core/clock.js'
import type { OperatorConfig, PolicyRuleConfig } from '../../../src/core/config/types.js'
import { effectDigest } from '../../../src/core/crypto/digest.js'
import { generateKeyPair, type KeyPair } from '../../../src/core/crypto/keys.js'
import { newNonce, signStatement } from '../../../src/core/crypto/sign.js'
import { signedJson, type ReleaseStatement } from '../../../src/core/crypto/statements.js'
import { toEffect, type Effect, type EffectInput } from '../../../src/core/effect.js'
import { InputError } from '../../../src/core/errors.js'
import { Gate } from '../../../src/core/gate.js'
import type { OperatorContext } from '../../../src/core/outbox/operator-context.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { releaseEffect } from '../../../src/core/outbox/release.js'
import { effectDetails } from '../../../src/core/outbox/show.js'
import { outboxStatus } from '../../../src/core/outbox/status.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay, type RelayOptions } from '../../../src/core/relay/relay.js'
import { proposal } from '../../../src/core/gate-context.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'
import { forge } from '../../helpers/tamper.js'

const HOUR = 3_600_000
const RULE: PolicyRuleConfig = { name: 'large-refunds', target: 'payments', when: [{ arg: 'amount', above: '500.00' }], quorum: 2, releaseTtlMs: HOUR }
const policy = new RulesPolicy([RULE])
const keys: Record<string, KeyPair> = Object.fromEntries(['alice', 'bob', 'mallory', 'trudy'].map((n) => [n, generateKeyPair('operator', n)]))
/** The relay's config trusts alice and bob only. */
const operators: OperatorConfig[] = ['alice', 'bob'].map((n) => ({ name: n, publicKey: keys[n]!.publicKey }))
const relayKey = generateKeyPair('relay', 'trusted-relay')

afterAll(() => dropOutboxDatabase())

let threads = 0
const refund = (amount: string, extra: JsonObject = {}): EffectInput => ({
  thread: `agent-${++threads}`,
  target: 'payments',
  action: 'refund',
  args: { amount, recipient: 'acct_customer', ...extra },
  premises: { charge: 'ch_1', balance: '1000.00' },
})

interface World {
  h: OutboxHarness
  store: Store
  payments: CountingTarget
  /** What reached the target: the args and premises of every apply. */
  received: { id: string; args: JsonObject; premises: JsonObject }[]
  logs: string[]
  relay(over?: Partial<RelayOptions>): Relay
  /** Journals PROPOSED → HELD, the records a relay with this policy writes (the inline gate runs the same step). */
  held(input: EffectInput): Promise<string>
  /** Held, then released by alice and bob through `outbox release`: AUTHORIZED with a valid quorum. */
  released(input: EffectInput): Promise<string>
  states(id: string): Promise<string[]>
  close(): Promise<void>
}

async function world(make: () => Promise<OutboxHarness>): Promise<World> {
  const h = await make()
  const store = await h.open()
  const payments = new CountingTarget('payments', 1)
  const received: World['received'] = []
  payments.onApply = (e) => void received.push({ id: e.id, args: structuredClone(e.args), premises: structuredClone(e.premises) })
  const logs: string[] = []
  const gate = new Gate({ store, targets: [payments], policy, retry: { maxAttempts: 1, backoffMs: 0 } })
  const ctx = (who: string): OperatorContext => ({ store, operators, policy, key: keys[who]!, clock: systemClock })
  const w: World = {
    h,
    store,
    payments,
    received,
    logs,
    relay: (over = {}) =>
      new Relay({ store, targets: [payments], relayId: 'trusted', key: relayKey, policy, operators, pollMs: 20, leaseMs: 5_000, retry: { maxAttempts: 1, backoffMs: 0 }, log: (l) => logs.push(l), ...over }),
    held: async (input) => {
      const o = await gate.submit(input)
      expect(o.status).toBe('held')
      return o.effectId
    },
    released: async (input) => {
      const id = await w.held(input)
      await releaseEffect(ctx('alice'), id)
      expect((await releaseEffect(ctx('bob'), id)).state).toBe('AUTHORIZED')
      return id
    },
    states: async (id) => (await store.history(id)).map((r) => r.state),
    close: async () => {
      await gate.close()
      await store.close()
      await h.dispose()
    },
  }
  return w
}

const refusedBy = (r: Relay): number => r.stats().refused ?? 0

/** Runs a relay until it has refused `refusals` effects or sent anything (or 10 s pass), then stops it. */
async function drain(w: World, refusals: number, over: Partial<RelayOptions> = {}): Promise<Relay> {
  const sent = w.received.length
  const r = w.relay(over)
  await r.start()
  try {
    await until(() => (refusals > 0 && refusedBy(r) >= refusals) || w.received.length > sent)
  } finally {
    await r.stop()
  }
  return r
}

/**
 * A relay drains and refuses `id`: nothing reaches the target, the journal
 * stays at `states`, one refusal is counted, and the relay's log line for the
 * effect matches `why`. Returns the relay and that line for further checks.
 */
async function expectRefused(w: World, id: string, states: string[], why: RegExp, over: Partial<RelayOptions> = {}): Promise<{ r: Relay; line: string }> {
  const r = await drain(w, 1, over)
  expect(w.received).toEqual([])
  expect(await w.states(id)).toEqual(states)
  expect(refusedBy(r)).toBe(1)
  const line = w.logs.find((l) => l.includes(id))
  expect(line).toMatch(why)
  return { r, line: line! }
}

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** A release as `outbox release` signs it, with every field open to the forger. */
function release(who: string, effect: Effect, over: Partial<ReleaseStatement> = {}): JsonObject {
  const now = Date.now()
  const statement: ReleaseStatement = {
    kind: 'release',
    effectId: effect.id,
    digest: effectDigest(effect),
    operator: who,
    rule: RULE.name,
    signedAt: new Date(now).toISOString(),
    expiresAt: new Date(now + HOUR / 2).toISOString(),
    nonce: newNonce(),
    ...over,
  }
  return signedJson(signStatement(statement, keys[who]!.seed))
}

/** Journals each release HELD → HELD, then HELD → AUTHORIZED carrying them, through the store's own append. */
async function forgeAuthorization(store: Store, id: string, releases: JsonObject[], signers: string[]): Promise<void> {
  for (const r of releases) expect((await store.append([{ effectId: id, from: 'HELD', to: 'HELD', data: { rule: RULE.name, release: r } }]))[0]!.ok).toBe(true)
  expect((await store.append([{ effectId: id, from: 'HELD', to: 'AUTHORIZED', data: { rule: RULE.name, releases, signers } }]))[0]!.ok).toBe(true)
}

function flipBit(signed: JsonObject): JsonObject {
  const sig = Buffer.from(signed.signature as string, 'base64url')
  sig[10] = sig[10]! ^ 0x01
  return { ...signed, signature: sig.toString('base64url') }
}

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
])('the relay as the trusted side, on %s', (_kind, make) => {
  it('an agent building new Outbox({ store, targets }) only proposes: the relay holds by its own policy, and sends only after two operators release', async () => {
    const w = await world(make)
    try {
      const outbox = new Outbox({ store: w.store, targets: [w.payments], pollMs: 20 })
      const big = await outbox.submit(refund('900.00'))
      const small = await outbox.submit(refund('12.00'))
      expect([big.state, small.state]).toEqual(['PROPOSED', 'PROPOSED'])
      // A short lease: the relay's full scan, which finds the released effect behind its cursor, comes sooner.
      const r = w.relay({ leaseMs: 1_000 })
      await r.start()
      expect(await big.result()).toMatchObject({ status: 'held', rule: 'large-refunds' })
      expect(await small.result()).toMatchObject({ status: 'committed' })
      expect(w.payments.calls.has(big.effectId)).toBe(false)
      expect(await w.states(big.effectId)).toEqual(['PROPOSED', 'HELD'])

      const ctx = (who: string): OperatorContext => ({ store: w.store, operators, policy, key: keys[who]!, clock: systemClock })
      await releaseEffect(ctx('alice'), big.effectId)
      await releaseEffect(ctx('bob'), big.effectId)
      expect(await outbox.result(big.effectId)).toMatchObject({ status: 'committed' })
      await r.stop()
      await outbox.close()
      expect(w.received.filter((x) => x.id === big.effectId)).toEqual([{ id: big.effectId, args: { amount: '900.00', recipient: 'acct_customer' }, premises: { charge: 'ch_1', balance: '1000.00' } }])
      expect(refusedBy(r)).toBe(0)
    } finally {
      await w.close()
    }
  })

  it('a relay cannot be built without the operators\' policy', async () => {
    const w = await world(make)
    try {
      const withoutPolicy = { store: w.store, targets: [w.payments], relayId: 'r', key: relayKey }
      expect(() => new Relay(withoutPolicy as unknown as RelayOptions)).toThrow(InputError)
      expect(() => new Relay({ ...withoutPolicy, policy: { evaluate: () => null } } as unknown as RelayOptions)).toThrow(/operators' policy/)
    } finally {
      await w.close()
    }
  })

  it('released, then its effects row\'s args changed (amount 99999, another recipient): nothing is sent, nothing written; refused, reported, parked', async () => {
    const w = await world(make)
    try {
      const id = await w.released(refund('900.00'))
      const row = (await w.store.get(id))!
      const forged = { ...row.effect, args: { amount: '99999.00', recipient: 'acct_mallory' } }
      await w.h.exec('UPDATE effects SET effect = ? WHERE id = ?', [canonicalJson(forged as unknown as JsonObject), id])

      const { r, line } = await expectRefused(
        w,
        id,
        ['PROPOSED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED'],
        /refused effect [0-9a-f]{64} on payments, nothing sent \(row-disagrees\): its effects row disagrees with its journal: args/,
        { healthPort: 0 },
      )
      expect(line).not.toContain('99999')
      expect(r.metrics.exposition(r.id)).toContain('interlock_relay_effects_refused_total{relay="trusted",target="payments",reason="row-disagrees"} 1')

      // Reported where an operator looks: `outbox status` (from the relay's heartbeat) and `outbox show`.
      const status = await outboxStatus(w.store, new Date())
      expect(status.refused).toMatchObject([{ effectId: id, relay: 'trusted', target: 'payments' }])
      expect(status.refused[0]!.why).toMatch(/disagrees with its journal: args/)
      const shown = await effectDetails(w.store, id)
      expect(shown.rowDisagrees).toEqual(['args'])
      expect(shown.effect.args).toEqual({ amount: '900.00', recipient: 'acct_customer' })

      // Parked: neither this relay nor another claims it again at once.
      const again = w.relay({ relayId: 'other' })
      await again.start()
      await new Promise((res) => setTimeout(res, 300))
      await again.stop()
      expect(again.metrics.claimed).toBe(0)
      expect(w.received).toEqual([])
    } finally {
      await w.close()
    }
  })

  it('released, then its effects row\'s premises changed: nothing is sent', async () => {
    const w = await world(make)
    try {
      const id = await w.released(refund('901.00'))
      const row = (await w.store.get(id))!
      await w.h.exec('UPDATE effects SET effect = ? WHERE id = ?', [canonicalJson({ ...row.effect, premises: { charge: 'ch_other', balance: '99999.00' } } as unknown as JsonObject), id])
      await expectRefused(w, id, ['PROPOSED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED'], /disagrees with its journal: premises/)
    } finally {
      await w.close()
    }
  })

  it('released, then args rewritten in the row and in the PROPOSED record with the chain recomputed: nothing is sent', async () => {
    const w = await world(make)
    try {
      const input = refund('902.00')
      const id = await w.released(input)
      const row = (await w.store.get(id))!
      const forged = { ...row.effect, args: { amount: '99999.00', recipient: 'acct_mallory' } }
      await forge(w.h, (rows) => rows.map((r) => (r.effect_id === id && r.state === 'PROPOSED' ? { ...r, data: canonicalJson(proposal(forged, 1)) } : r)), { effects: false })
      await w.h.exec('UPDATE effects SET effect = ? WHERE id = ?', [canonicalJson(forged as unknown as JsonObject), id])
      await expectRefused(w, id, ['PROPOSED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED'], /do not hash to its id/)
    } finally {
      await w.close()
    }
  })

  it('held, then its row\'s args changed: `outbox show` shows the journaled args and warns; `outbox release` signs nothing', async () => {
    const w = await world(make)
    try {
      const id = await w.held(refund('907.00'))
      const row = (await w.store.get(id))!
      await w.h.exec('UPDATE effects SET effect = ? WHERE id = ?', [canonicalJson({ ...row.effect, args: { amount: '99999.00', recipient: 'acct_mallory' } } as unknown as JsonObject), id])
      const shown = await effectDetails(w.store, id)
      expect(shown.effect.args).toEqual({ amount: '907.00', recipient: 'acct_customer' })
      expect(shown.rowDisagrees).toEqual(['args'])
      const ctx: OperatorContext = { store: w.store, operators, policy, key: keys.alice!, clock: systemClock }
      await expect(releaseEffect(ctx, id)).rejects.toThrow(/cannot be released: its effects row disagrees with its journal \(args\)/)
      expect(await w.states(id)).toEqual(['PROPOSED', 'HELD'])
    } finally {
      await w.close()
    }
  })

  it("UPDATE effects SET state='AUTHORIZED' on a HELD effect: nothing is sent, and no HELD → DISPATCHED is written", async () => {
    const w = await world(make)
    try {
      const id = await w.held(refund('903.00'))
      await w.h.exec(`UPDATE effects SET state = 'AUTHORIZED' WHERE id = ?`, [id])
      await expectRefused(w, id, ['PROPOSED', 'HELD'], /state \(row AUTHORIZED, journal HELD\)/)
    } finally {
      await w.close()
    }
  })

  it('journaled AUTHORIZED without ever being HELD, though the policy in force holds it: refused and held again for operators, sent once they release it; one the policy lets through is sent', async () => {
    const w = await world(make)
    try {
      // What an agent with write access can journal by itself: PROPOSED and AUTHORIZED in one append.
      const [big, small] = [toEffect(refund('904.00')), toEffect(refund('13.00'))]
      for (const e of [big, small]) {
        const res = await w.store.append([
          { effectId: e.id, from: null, to: 'PROPOSED', data: proposal(e, 1), effect: e, tier: 1 },
          { effectId: e.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
        ])
        expect(res.every((x) => x.ok)).toBe(true)
      }
      const r = w.relay()
      await r.start()
      await until(() => w.payments.calls.has(small.id) && (refusedBy(r) >= 1 || w.payments.calls.has(big.id)))
      await r.stop()
      expect(w.received.map((x) => x.id)).toEqual([small.id])
      expect(await w.states(big.id)).toEqual(['PROPOSED', 'AUTHORIZED', 'HELD'])
      const line = w.logs.find((l) => l.includes(big.id))
      expect(line).toMatch(/rule "large-refunds" holds it .*but it was authorized \(record \d+\) without being held/)
      expect(line).toContain('held again under rule "large-refunds" for operators to release or deny')
      // Held again, it is an ordinary held effect: two operators release it and a relay sends it, once.
      const ctx = (who: string): OperatorContext => ({ store: w.store, operators, policy, key: keys[who]!, clock: systemClock })
      await releaseEffect(ctx('alice'), big.id)
      expect((await releaseEffect(ctx('bob'), big.id)).state).toBe('AUTHORIZED')
      await drain(w, 0)
      await until(() => w.payments.count(big.id) === 1)
      expect(w.received.map((x) => x.id)).toEqual([small.id, big.id])
      expect(await w.states(big.id)).toEqual(['PROPOSED', 'AUTHORIZED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    } finally {
      await w.close()
    }
  })

  describe('a forged HELD → AUTHORIZED (its chain correct) is refused before dispatch and held again', () => {
    type Forgery = (e: Effect, other: { effect: Effect; bobsRelease: JsonObject }) => { releases: JsonObject[]; signers: string[]; why: RegExp }
    const forgeries: [string, Forgery][] = [
      ['carrying untrusted keys', (e) => ({ releases: [release('mallory', e), release('trudy', e)], signers: ['mallory', 'trudy'], why: /"mallory" is not a trusted operator/ })],
      ['counting one operator twice', (e) => ({ releases: [release('alice', e), release('alice', e)], signers: ['alice', 'alice'], why: /alice is already counted once; a quorum needs distinct operators/ })],
      [
        'replaying releases (the same statement twice; one made for another effect)',
        (e, other) => {
          const once = release('alice', e)
          return { releases: [once, once, other.bobsRelease], signers: ['alice', 'bob'], why: /nonce was already used: a replayed statement[\s\S]*it was signed for effect/ }
        },
      ],
      [
        'with expired releases',
        (e) => {
          const old = { signedAt: new Date(Date.now() - 2 * HOUR).toISOString(), expiresAt: new Date(Date.now() - HOUR).toISOString() }
          return { releases: [release('alice', e, old), release('bob', e, old)], signers: ['alice', 'bob'], why: /it expired at/ }
        },
      ],
      ['with a bit-flipped signature', (e) => ({ releases: [release('alice', e), flipBit(release('bob', e))], signers: ['alice', 'bob'], why: /release 2 by bob: the signature does not verify/ })],
      [
        'with releases signed for other args (a wrong digest)',
        (e) => {
          const digest = effectDigest({ ...e, args: { amount: '99999.00', recipient: 'acct_mallory' } })
          return { releases: [release('alice', e, { digest }), release('bob', e, { digest })], signers: ['alice', 'bob'], why: /it was signed for digest/ }
        },
      ],
      ['with no release at all', () => ({ releases: [], signers: ['alice', 'bob'], why: /no release recorded yet; rule "large-refunds" needs 2/ })],
    ]

    it.each(forgeries)('%s', async (_name, forgeRelease) => {
      const w = await world(make)
      try {
        // Bob legitimately released another effect: his statement there is what a replay copies.
        const otherId = await w.released(refund('905.00'))
        const other = (await w.store.history(otherId)).flatMap((r) => (r.state === 'HELD' && r.data.release ? [r.data.release as JsonObject] : []))
        const bobsRelease = other.find((s) => (s.statement as JsonObject).operator === 'bob')!
        const r0 = await drain(w, 0)
        expect(refusedBy(r0)).toBe(0)
        await until(() => w.payments.count(otherId) === 1)
        expect(w.received.map((x) => x.id)).toEqual([otherId])

        const id = await w.held(refund('906.00'))
        const effect = (await w.store.get(id))!.effect
        const { releases, signers, why } = forgeRelease(effect, { effect: (await w.store.get(otherId))!.effect, bobsRelease })
        await forgeAuthorization(w.store, id, releases, signers)
        const before = await w.states(id)
        expect(before.at(-1)).toBe('AUTHORIZED')

        const r = await drain(w, 1)
        expect(w.received.map((x) => x.id)).toEqual([otherId])
        expect(await w.states(id)).toEqual([...before, 'HELD'])
        expect(refusedBy(r)).toBe(1)
        const line = w.logs.find((l) => l.includes(id))!
        expect(line).toMatch(/\(unauthorized\): it was authorized \(record \d+\) without a valid quorum of releases/)
        expect(line).toMatch(why)
        expect(line).toContain('held again under rule "large-refunds"')
      } finally {
        await w.close()
      }
    })
  })
})
