/** verify checks relay receipts (crypto/statements.ts RelayReceiptStatement, as the relay journals them, beside its record signatures) against the relay keys it is given. */
import { afterEach, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../src/core/canonical-json.js'
import { effectDigest } from '../../../src/core/crypto/digest.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { signStatement } from '../../../src/core/crypto/sign.js'
import { signedJson } from '../../../src/core/crypto/statements.js'
import { followsOf } from '../../../src/core/crypto/record-signature.js'
import { effectJson, toEffect } from '../../../src/core/effect.js'
import { verifyStore } from '../../../src/core/outbox/verify-sources.js'
import { relaySigner } from '../../../src/core/relay/relay-signer.js'
import { recordHash } from '../../../src/core/stores/record-hash.js'
import type { Store } from '../../../src/core/stores/store.js'
import { sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'

const relay = generateKeyPair('relay', 'relay-1')
const other = generateKeyPair('relay', 'relay-1')

let h: OutboxHarness | undefined
let store: Store | undefined
afterEach(async () => {
  await store?.close()
  await h?.dispose()
})

/** PROPOSED → AUTHORIZED → DISPATCHED → COMMITTED as a relay journals it: every record past PROPOSED signed, the receipt too. */
async function committedWithReceipt(): Promise<void> {
  h = await sqliteOutbox()
  store = await h.open()
  const effect = toEffect({ thread: 't', target: 'payments', action: 'refund', args: { amount: '5.00' } })
  const signer = relaySigner('relay-1', relay, () => new Date('2026-01-01T00:00:00.000Z'))
  // Each signed record follows the one before it (record-signature.ts followsOf); the proposal is journaled as { effect, tier }.
  const authorized = signer.sign(effect.id, 'PROPOSED', 'AUTHORIZED', followsOf({ effect: effectJson(effect), tier: 1 }), {})
  const dispatched = signer.sign(effect.id, 'AUTHORIZED', 'DISPATCHED', followsOf(authorized), {})
  const results = await store.append([
    { effectId: effect.id, from: null, to: 'PROPOSED', data: {}, effect, tier: 1 },
    { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: authorized },
    { effectId: effect.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: dispatched },
    { effectId: effect.id, from: 'DISPATCHED', to: 'COMMITTED', data: signer.sign(effect.id, 'DISPATCHED', 'COMMITTED', followsOf(dispatched), { receipt: { refund: 're_1' } }) },
  ])
  expect(results.every((r) => r.ok)).toBe(true)
}

const receiptProblem = (r: Awaited<ReturnType<typeof verifyStore>>) => r.problems.find((p) => p.message.includes('receipt'))?.message

describe('verify and relay receipts', () => {
  it('counts a receipt valid with the relay key, unchecked without one, invalid with another', async () => {
    await committedWithReceipt()
    const valid = await verifyStore(store!, { operators: [], relays: [{ name: 'relay-1', publicKey: relay.publicKey }] })
    expect(valid).toMatchObject({ ok: true, receipts: { valid: 1, invalid: 0, unchecked: 0 } })
    expect(await verifyStore(store!, { operators: [] })).toMatchObject({ ok: true, receipts: { valid: 0, invalid: 0, unchecked: 1 } })
    const wrong = await verifyStore(store!, { operators: [], relays: [{ name: 'relay-1', publicKey: other.publicKey }] })
    expect(wrong).toMatchObject({ ok: false, receipts: { invalid: 1 } })
    expect(receiptProblem(wrong)).toMatch(/record 4 \(COMMITTED\): the receipt signed by relay relay-1 does not verify with its trusted key/)
  })

  it('accepts the key under another name when it is the key the receipt names (rotation), refuses a relay with no key given', async () => {
    await committedWithReceipt()
    const rotated = await verifyStore(store!, { operators: [], relays: [{ name: 'relay-2026', publicKey: other.publicKey }, { name: 'relay-2025', publicKey: relay.publicKey }] })
    expect(rotated).toMatchObject({ ok: true, receipts: { valid: 1 } })
    const unknown = await verifyStore(store!, { operators: [], relays: [{ name: 'relay-9', publicKey: other.publicKey }] })
    expect(receiptProblem(unknown)).toMatch(/signed by relay relay-1 with key ed25519:\S+, which is not a trusted relay key/)
  })

  it('finds a receipt altered after signing, even with the chain recomputed', async () => {
    await committedWithReceipt()
    const rows = await h!.rows()
    const last = rows.at(-1)!
    const data = JSON.parse(last.data)
    data.receipt.refund = 're_2'
    const text = canonicalJson(data)
    const hash = recordHash({ journal: last.journal, seq: last.seq, effectId: last.effect_id, state: 'COMMITTED', at: last.at, data: text, prevHash: last.prev_hash })
    await h!.rewrite([...rows.slice(0, -1), { ...last, data: text, hash }])
    const report = await verifyStore(store!, { operators: [], relays: [{ name: 'relay-1', publicKey: relay.publicKey }] })
    expect(report.ok).toBe(false)
    expect(report.receipts.invalid).toBe(1)
  })
})

describe('verify and operator acts written without a signature', () => {
  it('reports an AMBIGUOUS effect settled without a signed resolution', async () => {
    h = await sqliteOutbox()
    store = await h.open()
    const effect = toEffect({ thread: 't', target: 'mail', action: 'send', args: { to: 'x@example.com' } })
    await store.append([
      { effectId: effect.id, from: null, to: 'PROPOSED', data: {}, effect, tier: 3 },
      { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
      { effectId: effect.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: {} },
      { effectId: effect.id, from: 'DISPATCHED', to: 'AMBIGUOUS', data: { reason: 'timeout' } },
      { effectId: effect.id, from: 'AMBIGUOUS', to: 'COMMITTED', data: { receipt: {} } },
    ])
    const report = await verifyStore(store, { operators: [] })
    expect(report.ok).toBe(false)
    expect(report.firstBad?.message).toBe(`journal "t" record 5 (COMMITTED) resolves an AMBIGUOUS effect without an operator's signed resolution`)
  })

  it('reports a release signed by a key the config does not trust', async () => {
    h = await sqliteOutbox()
    store = await h.open()
    const effect = toEffect({ thread: 't', target: 'payments', action: 'refund', args: { amount: '900.00' } })
    const mallory = generateKeyPair('operator', 'mallory')
    const release = signStatement(
      { kind: 'release', effectId: effect.id, digest: effectDigest(effect), operator: 'mallory', rule: 'large', signedAt: '2026-01-01T00:00:00.000Z', expiresAt: '2999-01-01T00:00:00.000Z', nonce: 'n1' },
      mallory.seed,
    )
    await store.append([
      { effectId: effect.id, from: null, to: 'PROPOSED', data: {}, effect, tier: 1 },
      { effectId: effect.id, from: 'PROPOSED', to: 'HELD', data: { rule: 'large' } },
      { effectId: effect.id, from: 'HELD', to: 'HELD', data: { rule: 'large', release: signedJson(release) } },
    ])
    const report = await verifyStore(store, { operators: [{ name: 'alice', publicKey: generateKeyPair('operator', 'alice').publicKey }] })
    expect(report).toMatchObject({ ok: false, signatures: { valid: 0, invalid: 1 } })
    expect(report.firstBad?.message).toBe('journal "t" record 3 (HELD) is signed by "mallory", who is not a trusted operator')
  })
})
