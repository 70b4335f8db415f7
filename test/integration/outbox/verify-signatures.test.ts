/**
 * Who wrote each record, and how far each journal reached, in journals
 * written as before seals (crypto/seal.ts; verify-seals.test.ts): every
 * record a relay or gate wrote signed (crypto/record-signature.ts), which
 * `outbox verify` still checks; and a signed
 * anchor of the journals' heads (outbox/anchor-file.ts) is kept outside the
 * store. Forgeries made as anyone with write access to the store could make
 * them, on a real store of each kind: rows rewritten in the tables, the hash
 * chain recomputed (record-hash.ts), heads and effects rows brought into
 * line, so the chain alone sees none of them.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../src/core/canonical-json.js'
import { systemClock } from '../../../src/core/clock.js'
import type { OperatorConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { recordSignatureOf, recordSigner } from '../../../src/core/crypto/record-signature.js'
import { Gate } from '../../../src/core/gate.js'
import { anchorJournals } from '../../../src/core/outbox/anchor.js'
import { readAnchor } from '../../../src/core/outbox/anchor-file.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { redispatch } from '../../../src/core/outbox/redispatch.js'
import { resolveEffect } from '../../../src/core/outbox/resolve.js'
import { verifyStore } from '../../../src/core/outbox/verify-sources.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { relaySigner } from '../../../src/core/relay/relay-signer.js'
import type { Store } from '../../../src/core/stores/store.js'
import { signingStore } from '../../../src/core/stores/signing-store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { gateWorld, messages, policy, refund } from '../../helpers/gate-world.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'
import { forge, withData } from '../../helpers/tamper.js'

const relayKey = generateKeyPair('relay', 'relay-1')
const rogueKey = generateKeyPair('relay', 'relay-1')
const alice = generateKeyPair('operator', 'alice')
const operators: OperatorConfig[] = [{ name: 'alice', publicKey: alice.publicKey }]
const relays = [{ name: 'relay-1', publicKey: relayKey.publicKey }]
/** What an auditor without the relay's key trusts, and with it. */
const noKeys = { operators, policy }
const withKeys = { operators, policy, relays }
/** What an anchor is read with: alice's key, and the relay's. */
const anchorTrust = { operators: new Map([['alice', alice.publicKey]]), relays }
const anchorFile = () => join(mkdtempSync(join(tmpdir(), 'interlock-anchor-')), 'anchor.json')
/** alice anchors the journals' heads now, as `outbox anchor` with the relay key does (`--cover-unsigned` when told). */
const anchorByAlice = (store: Store, file: string, coverUnsigned = false) => anchorJournals(store, file, alice, { ...withKeys, coverUnsigned, now: new Date() })

afterAll(() => dropOutboxDatabase())

/** A store of the kind, and an inline gate that signs each record it journals with the relay's key, as before seals (or, `signing: false`, as before records were signed). */
const world = (make: () => Promise<OutboxHarness>, options: { signing?: boolean } = {}) =>
  gateWorld(make, {}, options.signing === false ? undefined : (store) => signingStore(store, recordSigner({ key: relayKey, id: 'relay-1', role: 'relay' })))

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
] as const)('verify against forgeries on %s', (_name, make) => {
  it('a journal a signing gate wrote verifies with the relay key: every record it wrote is signed, its proposals too', async () => {
    const w = await world(make)
    try {
      await w.gate.submit(refund('12.00'))
      await w.gate.submit(refund('900.00'))
      const rows = await w.h.rows()
      const report = await verifyStore(w.store, withKeys)
      expect(report.problems).toEqual([])
      expect(report.writers).toMatchObject({ valid: rows.length, invalid: 0, unsigned: 0, unchecked: 0 })
      // Without the key nothing relay-signed can be judged: counted, not failed.
      expect(await verifyStore(w.store, noKeys)).toMatchObject({ ok: true, writers: { valid: 0, unchecked: rows.length } })
    } finally {
      await w.close()
    }
  })

  it('an effect returned by its target and sent again: each signature follows the record before it in its own run', async () => {
    const w = await world(make)
    try {
      w.payments.faults.push({ kind: 'not-applied' })
      const out = await w.gate.submit(refund('14.00'))
      expect(out.status).toBe('committed')
      expect((await w.h.rows()).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
      expect(await verifyStore(w.store, withKeys)).toMatchObject({ ok: true, writers: { valid: 6, invalid: 0 } })
    } finally {
      await w.close()
    }
  })

  it('a forged DISPATCHED → FAILED, chain recomputed and rows matched: no relay signature, found with the relay key', async () => {
    const w = await world(make)
    try {
      const small = await w.gate.submit(refund('12.00'))
      expect(small.status).toBe('committed')
      const rows = await forge(w.h, (rows) =>
        rows.map((r) => (r.effect_id === small.effectId && r.state === 'COMMITTED' ? { ...r, state: 'FAILED', data: canonicalJson({ reason: 'card declined' }) } : r)),
      )
      const failed = rows.find((r) => r.state === 'FAILED')!
      const report = await verifyStore(w.store, withKeys)
      expect(report.ok).toBe(false)
      expect(report.writers.unsigned).toBe(1)
      expect(messages(report)).toEqual([
        `journal "agent-1" record ${failed.seq} of effect ${small.effectId} carries no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`,
      ])
      // Without a relay key it cannot be told: verify passes and says what it did not check.
      expect(await verifyStore(w.store, noKeys)).toMatchObject({ ok: true, writers: { unchecked: 4 } })
    } finally {
      await w.close()
    }
  })

  it('a signed record altered after signing, one signed by another key, and one whose signature was moved: each named', async () => {
    const w = await world(make)
    try {
      const a = await w.gate.submit(refund('12.00'))
      const b = await w.gate.submit(refund('13.00'))
      await forge(w.h, (rows) =>
        rows.map((r) => {
          // The receipt of a's COMMITTED record changed under its signature.
          if (r.effect_id === a.effectId && r.state === 'COMMITTED') return withData(r, (d) => ({ ...d, via: 'query' }))
          return r
        }),
      )
      const altered = await verifyStore(w.store, withKeys)
      expect(messages(altered)).toEqual([expect.stringMatching(/record 4 \(COMMITTED\): its record signature by relay relay-1 does not match the record's data: the data was altered after it was signed/)])

      // b's DISPATCHED record re-signed by a key nobody trusts (under the trusted relay's name).
      const forgedSig = recordSigner({ key: rogueKey, id: 'relay-1', role: 'relay' })
      await forge(w.h, (rows) =>
        rows.map((r) => {
          if (r.effect_id !== b.effectId || r.state !== 'DISPATCHED') return r
          const data = JSON.parse(r.data)
          const st = data.recordSignature.statement
          delete data.recordSignature
          return { ...r, data: canonicalJson(forgedSig.sign(st.effectId, st.from, st.to, st.follows, data)) }
        }),
      )
      const rogueReport = await verifyStore(w.store, withKeys)
      expect(messages(rogueReport)).toContainEqual(expect.stringMatching(/record 7 \(DISPATCHED\): its record signature does not verify with relay relay-1's trusted key \(forged or altered\)/))

      // b's COMMITTED signature copied onto a's COMMITTED record: signed for another effect.
      await forge(w.h, (rows) => {
        const bSig = JSON.parse(rows.find((r) => r.effect_id === b.effectId && r.state === 'COMMITTED')!.data).recordSignature
        return rows.map((r) => (r.effect_id === a.effectId && r.state === 'COMMITTED' ? withData(r, (d) => ({ ...d, via: 'apply', recordSignature: bSig })) : r))
      })
      expect(messages(await verifyStore(w.store, withKeys))).toContainEqual(expect.stringMatching(new RegExp(`record 4 \\(COMMITTED\\): its record signature by relay relay-1 was signed for effect ${b.effectId}`)))
    } finally {
      await w.close()
    }
  })

  it('a signed record moved to follow another record of its effect is named, also one of several written in one commit', async () => {
    const w = await world(make)
    try {
      // Returned once (the service vouches it did not apply it), then sent again: P A D (one commit), A', D', C.
      w.payments.faults.push({ kind: 'not-applied' })
      const a = await w.gate.submit(refund('15.00'))
      expect(a.status).toBe('committed')
      const states = (rows: { effect_id: string; state: string }[]) => rows.filter((r) => r.effect_id === a.effectId).map((r) => r.state)
      const original = await w.h.rows()
      expect(states(original)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
      const ofA = original.filter((r) => r.effect_id === a.effectId)
      expect(new Set(ofA.slice(0, 3).map((r) => r.at)).size).toBe(1)
      expect((await verifyStore(w.store, withKeys)).ok).toBe(true)

      // The return and the second send removed, the rest renumbered and rechained: P A D C, every transition legal.
      await forge(w.h, (rows) => rows.filter((r) => !(r.effect_id === a.effectId && (r.seq === 4 || r.seq === 5))).map((r) => (r.effect_id === a.effectId && r.seq === 6 ? { ...r, seq: 4 } : r)))
      expect(messages(await verifyStore(w.store, withKeys))).toEqual([
        expect.stringMatching(/record 4 \(COMMITTED\): its record signature by relay relay-1 was signed to follow another record of the effect, but the record follows record 3: it was moved or replayed/),
      ])

      // Put back, then the first commit's DISPATCHED (signed to follow the first AUTHORIZED) copied over the second send.
      await forge(w.h, (rows) => [...rows.filter((r) => r.effect_id !== a.effectId), ...ofA])
      expect((await verifyStore(w.store, withKeys)).ok).toBe(true)
      await forge(w.h, (rows) => rows.map((r) => (r.effect_id === a.effectId && r.seq === 5 ? { ...r, data: ofA[2]!.data } : r)))
      // Each signature names the one before it: the COMMITTED after the copy no longer follows what it was signed to follow either.
      expect(messages(await verifyStore(w.store, withKeys))).toEqual([
        expect.stringMatching(/record 5 \(DISPATCHED\): its record signature by relay relay-1 was signed to follow another record of the effect, but the record follows record 4: it was moved or replayed/),
        expect.stringMatching(/record 6 \(COMMITTED\): its record signature by relay relay-1 was signed to follow another record of the effect, but the record follows record 5: it was moved or replayed/),
      ])
    } finally {
      await w.close()
    }
  })

  it('written before records were signed: with the relay key every unsigned record fails (a stripped journal looks the same); an upgraded gate\'s records verify', async () => {
    const old = await world(make, { signing: false })
    try {
      // As an earlier version wrote it: a receipt on the COMMITTED record, nothing else signed.
      const receipt = relaySigner('relay-1', relayKey, () => new Date())
      const small = await old.gate.submit(refund('12.00'))
      old.mail.faults.push({ kind: 'refused' })
      const mail = await old.gate.submit({ thread: 'agent-1', target: 'mail', action: 'send', args: { to: 'a@example.com' } })
      expect(mail.status).toBe('failed')
      await forge(old.h, (rows) =>
        rows.map((r) => {
          if (r.effect_id !== small.effectId || r.state !== 'COMMITTED') return r
          const signed = receipt.sign(small.effectId, 'DISPATCHED', 'COMMITTED', null, JSON.parse(r.data))
          delete signed.recordSignature
          return { ...r, data: canonicalJson(signed) }
        }),
      )
      // Their authorizations straight from PROPOSED are judged by the policy in force; the other four are unsigned.
      const before = await verifyStore(old.store, withKeys)
      expect(before).toMatchObject({ ok: false, receipts: { valid: 1 }, writers: { unsigned: 4, valid: 0 } })
      expect(messages(before)).toHaveLength(2)

      // Upgraded: a signing gate writes on; then a writer without the key appends to the same journal.
      const signing = new Gate({ store: old.store, targets: [new CountingTarget('payments', 1)], policy, signing: { key: relayKey, id: 'relay-1' } })
      await signing.submit(refund('13.00'))
      const unsignedGate = new Gate({ store: old.store, targets: [new CountingTarget('payments', 1)], policy })
      const late = await unsignedGate.submit(refund('14.00'))
      const report = await verifyStore(old.store, withKeys)
      // The upgraded gate seals (crypto/seal.ts): its four records are in one seal.
      expect(report.writers).toMatchObject({ valid: 4, sealed: 4, unsigned: 6 })
      expect(messages(report)).toContainEqual(
        `journal "agent-1" records 15, 16 of effect ${late.effectId} carry no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`,
      )
      expect(messages(report)).toHaveLength(3)
    } finally {
      await old.close()
    }
  })

  it('a relay seals every record it writes; an operator re-sending an effect seals what that journals', async () => {
    const w = await world(make)
    try {
      const outbox = new Outbox({ store: w.store, targets: [w.payments, w.mail] })
      const handles = await Promise.all([outbox.submit(refund('20.00', 'relayed')), outbox.submit({ thread: 'relayed', target: 'mail', action: 'send', args: { to: 'b@example.com' } })])
      w.mail.faults.push({ kind: 'unknown' })
      const relay = new Relay({ store: w.store, targets: [w.payments, w.mail], policy, relayId: 'relay-1', key: relayKey, pollMs: 10, retry: { maxAttempts: 1, backoffMs: 0 } })
      await relay.start()
      const outcomes = await Promise.all(handles.map((h) => h.result()))
      await relay.stop()
      await outbox.close()
      expect(outcomes.map((o) => o.status)).toEqual(['committed', 'ambiguous'])
      // The agent proposed; the relay wrote everything after: its authorizations, sends and outcomes.
      const relayed = (await w.h.rows()).filter((r) => r.journal === 'relayed' && r.state !== 'PROPOSED')
      expect(relayed.map((r) => r.state).sort()).toEqual(['AMBIGUOUS', 'AUTHORIZED', 'AUTHORIZED', 'COMMITTED', 'DISPATCHED', 'DISPATCHED'])
      const sealedBy = async (hash: string) => (await w.store.seals()).filter((x) => x.statement.records.includes(hash)).map((x) => `${x.statement.role} ${x.statement.signer}`)
      for (const r of relayed) {
        expect(recordSignatureOf(JSON.parse(r.data)), `${r.seq} ${r.state}`).toBeUndefined()
        expect(await sealedBy(r.hash), `${r.seq} ${r.state}`).toEqual(['relay relay-1'])
      }

      // The operator resolves the AMBIGUOUS send with a re-send, from their own process, with their key.
      const ctx = { store: w.store, operators, policy, key: alice, clock: systemClock }
      const resolved = await resolveEffect(ctx, handles[1]!.effectId, 'redispatch')
      expect((await redispatch(w.store, new Map([['mail', w.mail]]), resolved.snapshot, undefined, alice)).status).toBe('committed')
      const last = (await w.h.rows()).filter((r) => r.effect_id === handles[1]!.effectId).at(-1)!
      expect(last.state).toBe('COMMITTED')
      expect(await sealedBy(last.hash)).toEqual(['operator alice'])

      // Every record the relay and the operator wrote verifies (the resolution itself carries the operator's statement).
      const report = await verifyStore(w.store, withKeys)
      expect(report.problems).toEqual([])
      expect(report.writers).toMatchObject({ valid: 7, sealed: 7, invalid: 0, unsigned: 0 })
      expect(report.seals.invalid).toBe(0)
    } finally {
      await w.close()
    }
  })

  describe('the anchor', () => {
    it('a journal cut back, its head and effects row rewritten: passes without the anchor, fails against it', async () => {
      const w = await world(make)
      try {
        await w.gate.submit(refund('12.00'))
        const small = await w.gate.submit(refund('13.00'))
        const file = anchorFile()
        const { result } = await anchorByAlice(w.store, file)
        expect(result).toMatchObject({ journals: 1, records: 8, coveredUnsigned: 0, signer: 'alice', role: 'operator' })
        const anchor = readAnchor(file, anchorTrust)
        expect((await verifyStore(w.store, { ...withKeys, anchor })).ok).toBe(true)

        // COMMITTED removed from the end: the refund looks DISPATCHED, ready to be sent again.
        await forge(w.h, (rows) => rows.filter((r) => !(r.effect_id === small.effectId && r.state === 'COMMITTED')))
        expect((await w.store.get(small.effectId))?.state).toBe('DISPATCHED')
        expect(await verifyStore(w.store, withKeys)).toMatchObject({ ok: true, problems: [] })
        const report = await verifyStore(w.store, { ...withKeys, anchor })
        expect(messages(report)).toEqual([
          `journal "agent-1" ends at record 7, but the anchor ${file} (signed by operator alice at ${anchor.at}) saw it reach record 8: records were removed from its end`,
        ])
      } finally {
        await w.close()
      }
    })

    it('the anchored record replaced by another, and an anchor altered or signed by someone untrusted, are refused', async () => {
      const w = await world(make)
      try {
        const a = await w.gate.submit(refund('12.00'))
        const file = anchorFile()
        await anchorByAlice(w.store, file)
        await forge(w.h, (rows) => rows.map((r) => (r.effect_id === a.effectId && r.state === 'COMMITTED' ? { ...r, at: '2020-01-01T00:00:00.000Z' } : r)))
        expect(messages(await verifyStore(w.store, { ...withKeys, anchor: readAnchor(file, anchorTrust) }))).toContainEqual(
          expect.stringMatching(/^journal "agent-1" record 4 \(COMMITTED\) is not the record the anchor .* holds at this place: the journal was rewritten at or before it$/),
        )
        const text = JSON.parse(readFileSync(file, 'utf8'))
        text.heads[0].seq = 2
        writeFileSync(file, JSON.stringify(text))
        expect(() => readAnchor(file, anchorTrust)).toThrow(`anchor file ${file} lists other heads than its signature covers (altered)`)
        expect(() => readAnchor(file, { operators: new Map(), relays })).toThrow(`anchor file ${file} is signed by operator "alice", who is not a trusted operator in interlock.toml`)
      } finally {
        await w.close()
      }
    })

    it('covers unsigned records only when told to (--cover-unsigned); verify then accepts them, and nothing unsigned after the heads', async () => {
      const w = await world(make, { signing: false })
      try {
        w.mail.faults.push({ kind: 'refused' })
        await w.gate.submit({ thread: 'mailer', target: 'mail', action: 'send', args: { to: 'a@example.com' } })
        expect((await verifyStore(w.store, withKeys)).writers).toMatchObject({ unsigned: 2 })
        const dir = mkdtempSync(join(tmpdir(), 'interlock-anchor-'))
        await expect(anchorByAlice(w.store, join(dir, 'a.json'))).rejects.toThrow(/^not anchored: the journals do not verify \(1 problem\)/)
        const { result } = await anchorByAlice(w.store, join(dir, 'a.json'), true)
        expect(result.coveredUnsigned).toBe(2)
        expect(await verifyStore(w.store, { ...withKeys, anchor: readAnchor(join(dir, 'a.json'), anchorTrust) })).toMatchObject({ ok: true, writers: { byAnchor: 2, unsigned: 0 } })

        // A signed record, then an unsigned one after it in the same journal: not anchored unless told to.
        const signing = new Gate({ store: w.store, targets: [new CountingTarget('mail', 3)], signing: { key: relayKey, id: 'relay-1' } })
        await signing.submit({ thread: 'mailer', target: 'mail', action: 'send', args: { to: 'b@example.com' } })
        await new Gate({ store: w.store, targets: [new CountingTarget('mail', 3)] }).submit({ thread: 'mailer', target: 'mail', action: 'send', args: { to: 'c@example.com' } })
        await expect(anchorByAlice(w.store, join(dir, 'b.json'))).rejects.toThrow(/^not anchored: the journals do not verify \(2 problems\)/)
        const covered = await anchorByAlice(w.store, join(dir, 'b.json'), true)
        expect(covered.result.coveredUnsigned).toBe(4)
        expect(await verifyStore(w.store, { ...withKeys, anchor: readAnchor(join(dir, 'b.json'), anchorTrust) })).toMatchObject({ ok: true, writers: { byAnchor: 4, valid: 4 } })
      } finally {
        await w.close()
      }
    })

    it('signatures stripped from a whole journal and a record forged: refused with the relay key alone, and against an anchor', async () => {
      const w = await world(make)
      try {
        const small = await w.gate.submit(refund('12.00'))
        const file = anchorFile()
        await anchorByAlice(w.store, file)
        const later = await w.gate.submit(refund('13.00'))
        // Every signature removed, the later refund turned into a failure, the chain recomputed.
        await forge(w.h, (rows) =>
          rows.map((r) => {
            const stripped = withData(r, (d) => {
              const { recordSignature: _gone, relaySignature: _also, ...rest } = d
              return rest
            })
            return r.effect_id === later.effectId && r.state === 'COMMITTED' ? { ...stripped, state: 'FAILED', data: canonicalJson({ reason: 'card declined' }) } : stripped
          }),
        )
        const keysOnly = await verifyStore(w.store, withKeys)
        expect(keysOnly).toMatchObject({ ok: false, writers: { valid: 0, unsigned: 4 } })
        expect(messages(keysOnly)).toContainEqual(`journal "agent-1" records 7, 8 of effect ${later.effectId} carry no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`)
        const report = await verifyStore(w.store, { ...withKeys, anchor: readAnchor(file, anchorTrust) })
        expect(report.ok).toBe(false)
        expect(messages(report)).toContainEqual(expect.stringMatching(/^journal "agent-1" record 4 \(COMMITTED\) is not the record the anchor .* holds at this place/))
        expect(messages(report)).toContainEqual(`journal "agent-1" records 7, 8 of effect ${later.effectId} carry no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`)
        expect(small.status).toBe('committed')
      } finally {
        await w.close()
      }
    })
  })
})
