/**
 * Operators on a real store of each kind: releases below and at quorum, two
 * operators at once, denials, resolutions, and `outbox verify` (store and
 * export) against journals tampered with in every way that matters.
 */
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import * as canonical from '../../../src/core/canonical-json.js'
import { systemClock } from '../../../src/core/clock.js'
import type { OperatorConfig } from '../../../src/core/config/types.js'
import { generateKeyPair, type KeyPair } from '../../../src/core/crypto/keys.js'
import { denyEffect, releaseEffect } from '../../../src/core/outbox/release.js'
import { resolveEffect } from '../../../src/core/outbox/resolve.js'
import { redispatch } from '../../../src/core/outbox/redispatch.js'
import { exportJournal } from '../../../src/core/outbox/export-file.js'
import { verifyExport, verifyStore } from '../../../src/core/outbox/verify-sources.js'
import type { OperatorContext } from '../../../src/core/outbox/operator-context.js'
import type { Store } from '../../../src/core/stores/store.js'
import { gateWorld, policy, refund, type GateWorld } from '../../helpers/gate-world.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type RawRecord } from '../../helpers/outbox-stores.js'
import { rechain } from '../../helpers/tamper.js'

const keys: Record<string, KeyPair> = Object.fromEntries(['alice', 'bob', 'mallory'].map((n) => [n, generateKeyPair('operator', n)]))
const operators: OperatorConfig[] = ['alice', 'bob'].map((n) => ({ name: n, publicKey: keys[n]!.publicKey }))
const ctx = (store: Store, who: string): OperatorContext => ({ store, operators, policy, key: keys[who]!, clock: systemClock })
const trust = { operators, policy }

afterAll(() => dropOutboxDatabase())

/** A journal with a held-then-released effect, a small refund and a denied one. */
async function busyJournal(w: GateWorld): Promise<string> {
  const big = await w.gate.submit(refund('900.00'))
  await w.gate.submit(refund('12.00'))
  await releaseEffect(ctx(w.store, 'alice'), big.effectId)
  await releaseEffect(ctx(w.store, 'bob'), big.effectId)
  await w.gate.recover()
  const denied = await w.gate.submit(refund('700.00'))
  await denyEffect(ctx(w.store, 'alice'), denied.effectId, 'customer already refunded by hand')
  return big.effectId
}

const TAMPERS: [string, (rows: RawRecord[]) => RawRecord[], RegExp][] = [
  ['a flipped byte in a record', (rows) => rows.map((r, i) => (i === 0 ? { ...r, data: r.data.replace('900.00', '900.01') } : r)), /record 1 .*altered/],
  ['a deleted record', (rows) => rows.filter((_, i) => i !== 2), /record 4 .*expected record 3 next/],
  ['the last record of a journal deleted', (rows) => rows.slice(0, -1), /records were removed from the end/],
  ['two records reordered', (rows) => rows.map((r, i) => (i === 1 ? { ...rows[2]!, seq: 2 } : i === 2 ? { ...rows[1]!, seq: 3 } : r)), /record 2 .*(broken|altered)/],
  [
    'an inserted record',
    (rows) => {
      const fake = { ...rows[1]!, state: 'AUTHORIZED', data: '{}' }
      const out = [...rows.slice(0, 2), fake, ...rows.slice(2)]
      return out.map((r, i) => (r.journal === rows[0]!.journal ? { ...r, seq: i + 1 } : r))
    },
    /record 3 .*(broken|altered)/,
  ],
  [
    'a forged signature, the chain recomputed around it',
    (rows) => {
      const i = rows.findIndex((r) => r.data.includes('"release":{'))
      const data = JSON.parse(rows[i]!.data)
      const sig = Buffer.from(data.release.signature, 'base64url')
      sig[10]! ^= 1
      data.release.signature = sig.toString('base64url')
      return rechain(rows.map((r, j) => (j === i ? { ...r, data: canonical.canonicalJson(data) } : r)))
    },
    /release signature by alice that does not verify/,
  ],
  [
    'an authorization with its releases removed, the chain recomputed around it',
    (rows) => {
      const i = rows.findIndex((r) => r.state === 'AUTHORIZED' && r.data.includes('"releases"'))
      const data = JSON.parse(rows[i]!.data)
      data.releases = []
      return rechain(rows.map((r, j) => (j === i ? { ...r, data: canonical.canonicalJson(data) } : r)))
    },
    /authorizes a held effect with 0 valid releases unexpired when the last was journaled; rule "large-refunds" needs 2/,
  ],
]

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
])('operators on %s', (_kind, make) => {
  it('a release below quorum is journaled HELD → HELD; the one that completes it authorizes; the gate dispatches once', async () => {
    const w = await gateWorld(make)
    try {
      const held = await w.gate.submit(refund('900.00'))
      expect(held).toMatchObject({ status: 'held', rule: 'large-refunds' })
      const first = await releaseEffect(ctx(w.store, 'alice'), held.effectId)
      expect(first).toMatchObject({ state: 'HELD', quorum: { have: 1, need: 2, signers: ['alice'] } })
      expect(first.reasons).toEqual(['below quorum: 1 of 2 distinct operators have released it under rule "large-refunds"'])
      const second = await releaseEffect(ctx(w.store, 'bob'), held.effectId)
      expect(second).toMatchObject({ state: 'AUTHORIZED', quorum: { have: 2, need: 2, signers: ['alice', 'bob'] }, reasons: [] })
      const history = await w.store.history(held.effectId)
      expect(history.map((r) => r.state)).toEqual(['PROPOSED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED'])
      expect(history[1]!.data).toMatchObject({ rule: 'large-refunds', reason: 'args.amount 900.00 USD is above 500.00' })
      expect(history[4]!.data.signers).toEqual(['alice', 'bob'])
      expect((await w.gate.recover()).effects).toMatchObject([{ effectId: held.effectId }])
      expect(await w.store.get(held.effectId)).toMatchObject({ state: 'COMMITTED' })
      expect(w.payments.applied.get(held.effectId)).toBe(1)
      const report = await verifyStore(w.store, trust)
      expect(report.problems).toEqual([])
      expect(report.signatures).toEqual({ valid: 4, invalid: 0 })
    } finally {
      await w.close()
    }
  })

  it('two operators releasing the same effect at once: one AUTHORIZED carrying both signatures, none lost', async () => {
    const w = await gateWorld(make)
    const other = await w.h.open()
    try {
      for (let i = 0; i < 6; i++) {
        const held = await w.gate.submit(refund(`${600 + i}.00`, `agent-${i}`))
        const results = await Promise.all([releaseEffect(ctx(w.store, 'alice'), held.effectId), releaseEffect(ctx(other, 'bob'), held.effectId)])
        expect(results.some((r) => r.state === 'AUTHORIZED')).toBe(true)
        const history = await w.store.history(held.effectId)
        const authorized = history.filter((r) => r.state === 'AUTHORIZED')
        expect(authorized).toHaveLength(1)
        expect([...(authorized[0]!.data.signers as string[])].sort()).toEqual(['alice', 'bob'])
        const signed = history.filter((r) => r.state === 'HELD' && r.data.release).map((r) => (r.data.release as { statement: { operator: string } }).statement.operator)
        expect(signed.sort()).toEqual(['alice', 'bob'])
      }
      expect((await verifyStore(w.store, trust)).problems).toEqual([])
    } finally {
      await other.close()
      await w.close()
    }
  })

  it('a denial rejects the effect with the signed reason; nothing is dispatched', async () => {
    const w = await gateWorld(make)
    try {
      const held = await w.gate.submit(refund('800.00'))
      const denied = await denyEffect(ctx(w.store, 'bob'), held.effectId, 'looks like fraud')
      expect(denied.state).toBe('REJECTED')
      expect(await w.store.get(held.effectId)).toMatchObject({ state: 'REJECTED', detail: { violations: ['denied by operator bob: looks like fraud'] } })
      await w.gate.recover()
      expect(w.payments.calls.size).toBe(0)
      await expect(releaseEffect(ctx(w.store, 'alice'), held.effectId)).rejects.toMatchObject({ code: 'E_CONFLICT' })
      expect((await verifyStore(w.store, trust)).ok).toBe(true)
    } finally {
      await w.close()
    }
  })

  it('an untrusted or mismatched key cannot release', async () => {
    const w = await gateWorld(make)
    try {
      const held = await w.gate.submit(refund('800.00'))
      await expect(releaseEffect(ctx(w.store, 'mallory'), held.effectId)).rejects.toMatchObject({ code: 'E_UNTRUSTED_KEY' })
      const impostor = { ...ctx(w.store, 'alice'), key: { ...keys.mallory!, name: 'alice' } }
      await expect(releaseEffect(impostor, held.effectId)).rejects.toMatchObject({ code: 'E_UNTRUSTED_KEY' })
      expect((await w.store.history(held.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'HELD'])
    } finally {
      await w.close()
    }
  })

  it('AMBIGUOUS is resolved by a signed resolution: applied, not applied, or explicitly sent again', async () => {
    const w = await gateWorld(make)
    try {
      const ambiguous = async (to: string) => {
        w.mail.faults.push({ kind: 'unknown' })
        const o = await w.gate.submit({ thread: 'mailer', target: 'mail', action: 'send', args: { to } })
        expect(o.status).toBe('ambiguous')
        return o.effectId
      }
      const a = await ambiguous('a@example.com')
      expect(await resolveEffect(ctx(w.store, 'alice'), a, 'applied')).toMatchObject({ state: 'COMMITTED' })
      const b = await ambiguous('b@example.com')
      expect(await resolveEffect(ctx(w.store, 'bob'), b, 'not-applied')).toMatchObject({ state: 'FAILED' })
      expect(await w.store.get(b)).toMatchObject({ detail: { reason: 'resolved as not applied by operator bob' } })
      const c = await ambiguous('c@example.com')
      const r = await resolveEffect(ctx(w.store, 'alice'), c, 'redispatch')
      expect(r.state).toBe('DISPATCHED')
      const sent = await redispatch(w.store, new Map([['mail', w.mail]]), r.snapshot)
      expect(sent.status).toBe('committed')
      expect(w.mail.calls.get(c)).toBe(2)
      await expect(resolveEffect(ctx(w.store, 'alice'), a, 'applied')).rejects.toMatchObject({ code: 'E_CONFLICT' })
      const report = await verifyStore(w.store, trust)
      expect(report.problems).toEqual([])
      expect(report.signatures.valid).toBe(3)
    } finally {
      await w.close()
    }
  })

  describe('verify finds tampering', () => {
    it('a clean journal verifies, from the store and from an export', async () => {
      const w = await gateWorld(make)
      try {
        await busyJournal(w)
        const report = await verifyStore(w.store, trust)
        expect(report).toMatchObject({ ok: true, problems: [], effects: 3 })
        const file = join(mkdtempSync(join(tmpdir(), 'interlock-export-')), 'journal.jsonl')
        expect(await exportJournal(w.store, file, new Date())).toMatchObject({ records: report.records, effects: 3 })
        expect(await verifyExport(file, trust)).toMatchObject({ ok: true, records: report.records })
      } finally {
        await w.close()
      }
    })

    for (const [name, tamper, expected] of TAMPERS) {
      it(`${name}: in the store and in an export`, async () => {
        const w = await gateWorld(make)
        try {
          await busyJournal(w)
          const file = join(mkdtempSync(join(tmpdir(), 'interlock-export-')), 'journal.jsonl')
          await exportJournal(w.store, file, new Date())
          await w.h.rewrite(tamper(await w.h.rows()))
          const report = await verifyStore(w.store, trust)
          expect(report.ok).toBe(false)
          expect(report.firstBad?.message).toMatch(expected)

          // The same tampering, in the exported file.
          const lines = readFileSync(file, 'utf8').trimEnd().split('\n')
          const rows = lines.slice(1, -1).map((l) => {
            const r = JSON.parse(l)
            return { journal: r.journal, seq: r.seq, effect_id: r.effectId, state: r.state, at: r.at, data: canonical.canonicalJson(r.data), prev_hash: r.prevHash, hash: r.hash }
          })
          const back = tamper(rows).map((r) =>
            JSON.stringify({ journal: r.journal, seq: r.seq, effectId: r.effect_id, state: r.state, at: r.at, data: JSON.parse(r.data), prevHash: r.prev_hash, hash: r.hash }),
          )
          writeFileSync(file, [lines[0], ...back, lines.at(-1)].join('\n') + '\n')
          const fromFile = await verifyExport(file, trust)
          expect(fromFile.ok).toBe(false)
          expect(fromFile.firstBad?.message).toMatch(expected)
        } finally {
          await w.close()
        }
      })
    }

    it('an export cut short is refused', async () => {
      const w = await gateWorld(make)
      try {
        await busyJournal(w)
        const file = join(mkdtempSync(join(tmpdir(), 'interlock-export-')), 'journal.jsonl')
        await exportJournal(w.store, file, new Date())
        const lines = readFileSync(file, 'utf8').trimEnd().split('\n')
        writeFileSync(file, lines.slice(0, -1).join('\n') + '\n')
        const report = await verifyExport(file, trust)
        expect(report.ok).toBe(false)
        expect(report.problems.map((p) => p.message)).toContain(`export file ${file} has no end line; it was cut short`)
      } finally {
        await w.close()
      }
    })
  })
})
