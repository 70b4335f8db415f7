/**
 * The notary log's contract (docs/notary.md), run against every NotaryStore:
 * who may write what, the chain, and the decision row that makes claim and
 * abort exclude each other.
 */
import { describe, expect, it } from 'vitest'
import type { JsonObject } from '../../src/core/canonical-json.js'
import { generateKeyPair, type KeyPair } from '../../src/core/crypto/keys.js'
import { sha256Hex } from '../../src/core/hash.js'
import { notaryLog, type NotaryLog, type WriteAnswer } from '../../src/core/notary/log.js'
import { GENESIS, recordHash, signRecord, type NotaryKind, type SignedRecord, type StoredRecord } from '../../src/core/notary/records.js'
import type { NotaryStore } from '../../src/core/notary/store.js'
import { verifyNotaryStore } from '../../src/core/notary/verify.js'

export interface NotaryStoreHarness {
  /** A fresh, empty store; `name` tells one store of a test from another. */
  open(name: string): Promise<NotaryStore>
  /** The same store again, as a restarted notary opens it. */
  reopen(name: string): Promise<NotaryStore>
  /** Changes a stored record's body behind the notary's back. */
  tamper(name: string, effect: string, seq: number, body: JsonObject): Promise<void>
  /** Inserts a record row straight into the store's table, around the notary (a database attacker). */
  insert(name: string, record: StoredRecord): Promise<void>
  /** Deletes a record row straight from the store's table. */
  remove(name: string, effect: string, seq: number): Promise<void>
}

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('relay', 'svc')
const otherService = generateKeyPair('relay', 'svc-2')
const trusted = {
  agents: { 'agent-1': agent.publicKey },
  services: { svc: service.publicKey, 'svc-2': otherService.publicKey },
}

let effects = 0
const newEffect = () => sha256Hex(`notary-contract-${process.pid}-${++effects}-${Math.random()}`)

/** Signs `kind` for attempt `n` after the chain's current head, as a writer does. */
async function write(log: NotaryLog, key: KeyPair, writer: string, effect: string, attempt: number, kind: NotaryKind, body: JsonObject = {}): Promise<WriteAnswer> {
  const { head } = await log.effect(effect)
  return log.write(signed(key, writer, effect, attempt, kind, head, body))
}

function signed(key: KeyPair, writer: string, effect: string, attempt: number, kind: NotaryKind, prev: string, body: JsonObject = {}): SignedRecord {
  return signRecord({ effect, attempt, kind, writer, at: new Date().toISOString(), body, prev }, key)
}

export function notaryLogContract(storeName: string, harness: NotaryStoreHarness): void {
  describe(`notary log on ${storeName}`, () => {
    const open = async (name: string) => notaryLog(await harness.open(name), trusted)

    it('records intend, claim and performed in one chain; the attempt is PERFORMED and the chain verifies', async () => {
      const log = await open('straight')
      const e = newEffect()
      expect((await write(log, agent, 'agent-1', e, 1, 'intend')).status).toBe('written')
      expect((await write(log, service, 'svc', e, 1, 'claim')).view?.state).toBe('CLAIMED')
      const done = await write(log, service, 'svc', e, 1, 'performed', { status: 200, body: { id: 'op_1' } })
      expect(done.status).toBe('written')
      expect(done.view).toMatchObject({ state: 'PERFORMED', claimedBy: 'svc' })
      const view = await log.attempt(e, 1)
      expect(view.records.map((r) => [r.seq, r.kind])).toEqual([[1, 'intend'], [2, 'claim'], [3, 'performed']])
      expect(view.records[0]!.prev).toBe(GENESIS)
      expect(view.records[1]!.prev).toBe(view.records[0]!.hash)
      expect(view.head).toBe(view.records[2]!.hash)
      expect(await log.verify(e)).toEqual([])
      await log.close()
    })

    it('abort first: a later claim of the attempt is answered ABORTED and nothing is written; attempt 2 is a fresh decision', async () => {
      const log = await open('abort-first')
      const e = newEffect()
      await write(log, agent, 'agent-1', e, 1, 'intend')
      expect((await write(log, agent, 'agent-1', e, 1, 'abort')).status).toBe('written')
      const late = await write(log, service, 'svc', e, 1, 'claim')
      expect(late).toMatchObject({ status: 'decided', view: { state: 'ABORTED' } })
      expect((await log.attempt(e, 1)).records.map((r) => r.kind)).toEqual(['intend', 'abort'])
      expect((await write(log, service, 'svc', e, 2, 'claim')).status).toBe('written')
      await log.close()
    })

    it('claim first: a later abort is answered CLAIMED and nothing is written; the service\'s second claim reads its own decision', async () => {
      const log = await open('claim-first')
      const e = newEffect()
      await write(log, agent, 'agent-1', e, 1, 'intend')
      await write(log, service, 'svc', e, 1, 'claim')
      expect(await write(log, agent, 'agent-1', e, 1, 'abort')).toMatchObject({ status: 'decided', view: { state: 'CLAIMED', claimedBy: 'svc' } })
      await write(log, service, 'svc', e, 1, 'performed', { status: 200 })
      expect(await write(log, service, 'svc', e, 1, 'claim')).toMatchObject({ status: 'decided', view: { state: 'PERFORMED' } })
      expect((await log.attempt(e, 1)).records.map((r) => r.kind)).toEqual(['intend', 'claim', 'performed'])
      await log.close()
    })

    it('claim and abort signed after the same head: one is written, the other is not, and the attempt has one decision', async () => {
      const log = await open('race')
      const e = newEffect()
      const { head } = await write(log, agent, 'agent-1', e, 1, 'intend')
      const answers = await Promise.all([
        log.write(signed(service, 'svc', e, 1, 'claim', head)),
        log.write(signed(agent, 'agent-1', e, 1, 'abort', head)),
      ])
      expect(answers.filter((a) => a.status === 'written')).toHaveLength(1)
      const kinds = (await log.attempt(e, 1)).records.map((r) => r.kind)
      expect(kinds.filter((k) => k === 'claim' || k === 'abort')).toHaveLength(1)
      // The loser, signing again after the new head, is told the winner.
      const loser = answers[0]!.status === 'written' ? 'abort' : 'claim'
      const again = loser === 'abort' ? await write(log, agent, 'agent-1', e, 1, 'abort') : await write(log, service, 'svc', e, 1, 'claim')
      expect(again.status).toBe('decided')
      await log.close()
    })

    it('the store itself keeps one decision per attempt: an abort appended after a claim of the same attempt is not stored', async () => {
      const store = await harness.open('decision-row')
      const e = newEffect()
      const claim = signed(service, 'svc', e, 1, 'claim', GENESIS)
      const claimHash = recordHash(claim)
      expect(await store.append({ ...claim, seq: 1, hash: claimHash })).toBe('appended')
      const abort = signed(agent, 'agent-1', e, 1, 'abort', claimHash)
      expect(await store.append({ ...abort, seq: 2, hash: recordHash(abort) })).toBe('decided')
      expect(await store.append({ ...abort, seq: 2, hash: recordHash(abort), prev: GENESIS })).toBe('stale')
      expect((await store.chain(e)).map((r) => r.kind)).toEqual(['claim'])
      await store.close()
    })

    it('refuses a forged record: a trusted writer\'s name with another key\'s signature, or a signed record altered after signing', async () => {
      const log = await open('forged')
      const e = newEffect()
      const impostor = generateKeyPair('relay', 'svc')
      await write(log, agent, 'agent-1', e, 1, 'intend')
      const { head } = await log.effect(e)
      expect((await log.write(signed(impostor, 'svc', e, 1, 'claim', head))).status).toBe('forged')
      const genuine = signed(agent, 'agent-1', e, 1, 'abort', head)
      expect((await log.write({ ...genuine, attempt: 2 })).status).toBe('forged')
      expect((await log.attempt(e, 1)).state).toBe('INTENDED')
      expect((await log.effect(e)).head).toBe(head)
      await log.close()
    })

    it('refuses a writer not trusted for the kind: an agent key claiming, a service aborting, a stranger intending', async () => {
      const log = await open('roles')
      const e = newEffect()
      const stranger = generateKeyPair('relay', 'stranger')
      expect((await write(log, agent, 'agent-1', e, 1, 'claim')).status).toBe('untrusted')
      expect((await write(log, service, 'svc', e, 1, 'abort')).status).toBe('untrusted')
      expect((await write(log, stranger, 'stranger', e, 1, 'intend')).status).toBe('untrusted')
      expect((await log.effect(e)).attempts).toEqual([])
      await log.close()
    })

    it('refuses a replayed record: the same signed intend, claim or abort sent again is stale and stored once', async () => {
      const log = await open('replay')
      const e = newEffect()
      const intend = signed(agent, 'agent-1', e, 1, 'intend', GENESIS)
      expect((await log.write(intend)).status).toBe('written')
      expect((await log.write(intend)).status).toBe('stale')
      const abort = signed(agent, 'agent-1', e, 1, 'abort', (await log.effect(e)).head)
      expect((await log.write(abort)).status).toBe('written')
      await write(log, agent, 'agent-1', e, 2, 'intend')
      // An old abort of attempt 1 sent again, after attempt 2 began, changes nothing.
      expect((await log.write(abort)).status).toBe('stale')
      expect((await log.effect(e)).attempts.map((a) => a.state)).toEqual(['ABORTED', 'INTENDED'])
      await log.close()
    })

    it('performed and failed only follow a claim by the same service', async () => {
      const log = await open('outcomes')
      const e = newEffect()
      expect((await write(log, service, 'svc', e, 1, 'performed')).status).toBe('refused')
      await write(log, service, 'svc', e, 1, 'claim')
      expect((await write(log, otherService, 'svc-2', e, 1, 'performed')).status).toBe('refused')
      expect((await write(log, service, 'svc', e, 1, 'failed', { reason: 'no such account' })).view?.state).toBe('FAILED')
      expect((await write(log, service, 'svc', e, 1, 'performed')).status).toBe('refused')
      expect((await write(log, agent, 'agent-1', e, 1, 'intend')).status).toBe('refused')
      await log.close()
    })

    it('keeps what it answered "written" across a restart, and verify finds a record altered in the store', async () => {
      const log = await open('durable')
      const e = newEffect()
      await write(log, agent, 'agent-1', e, 1, 'intend')
      await write(log, service, 'svc', e, 1, 'claim')
      await write(log, service, 'svc', e, 1, 'performed', { status: 200, body: { id: 'op_9' } })
      await log.close()
      const again = notaryLog(await harness.reopen('durable'), trusted)
      expect((await again.attempt(e, 1)).state).toBe('PERFORMED')
      expect(await again.verify(e)).toEqual([])
      await again.close()
      await harness.tamper('durable', e, 3, { status: 200, body: { id: 'op_forged' } })
      const tampered = notaryLog(await harness.reopen('durable'), trusted)
      expect((await tampered.verify(e)).join('\n')).toMatch(/record 3 \(performed, attempt 1\): its hash does not match[\s\S]*record 3 \(performed, attempt 1\): not signed by svc/)
      await tampered.close()
    })

    it('answers a malformed body as malformed', async () => {
      const log = await open('malformed')
      expect((await log.write({ effect: 'x', kind: 'claim' })).status).toBe('malformed')
      expect((await log.write(null)).status).toBe('malformed')
      await log.close()
    })
  })

  describe(`notary verify on ${storeName}`, () => {
    const open = async (name: string) => notaryLog(await harness.open(name), trusted)
    /** A log of two effects as the protocol writes them: one performed, one aborted then performed at attempt 2. */
    async function clean(name: string): Promise<{ performed: string; retried: string }> {
      const log = await open(name)
      const performed = newEffect()
      await write(log, agent, 'agent-1', performed, 1, 'intend')
      await write(log, service, 'svc', performed, 1, 'claim')
      await write(log, service, 'svc', performed, 1, 'performed', { status: 200, body: { id: 'op_1' } })
      const retried = newEffect()
      await write(log, agent, 'agent-1', retried, 1, 'intend')
      await write(log, agent, 'agent-1', retried, 1, 'abort')
      await write(log, agent, 'agent-1', retried, 2, 'intend')
      await write(log, service, 'svc', retried, 2, 'claim')
      await write(log, service, 'svc', retried, 2, 'performed', { status: 200, body: { id: 'op_2' } })
      await log.close()
      return { performed, retried }
    }
    const verify = async (name: string) => {
      const store = await harness.reopen(name)
      try {
        return await verifyNotaryStore(store, trusted)
      } finally {
        await store.close()
      }
    }
    /** A record chained after the effect's head, written straight to the store. */
    async function appendAround(name: string, key: KeyPair, writer: string, effect: string, attempt: number, kind: NotaryKind, body: JsonObject = {}) {
      const store = await harness.reopen(name)
      const chain = await store.chain(effect)
      await store.close()
      const record = signed(key, writer, effect, attempt, kind, chain.at(-1)!.hash, body)
      await harness.insert(name, { ...record, seq: chain.at(-1)!.seq + 1, hash: recordHash(record) })
    }

    it('a log written through the notary verifies: counts per kind, every signature valid, no problem', async () => {
      const { retried } = await clean('verify-clean')
      const log = await open('verify-clean')
      const unclaimed = newEffect()
      await write(log, agent, 'agent-1', unclaimed, 1, 'intend')
      await log.close()
      const report = await verify('verify-clean')
      expect(report).toMatchObject({ ok: true, effects: 3, records: 9, problems: [] })
      expect(report.kinds).toEqual({ intend: 4, claim: 2, performed: 2, failed: 0, abort: 1 })
      expect(report.signatures).toEqual({ valid: 9, invalid: 0 })
      // Sent and never claimed: listed, not a problem (a service that performs without claiming is not notarized).
      expect(report.unclaimed).toEqual(expect.arrayContaining([{ effect: unclaimed, attempt: 1, state: 'INTENDED' }, { effect: retried, attempt: 1, state: 'ABORTED' }]))
      expect(report.unclaimed).toHaveLength(2)
      expect(report.firstBad).toBeUndefined()
    })

    it('a forged record (signed by a key that is not the writer\'s) is caught, naming the effect and the record', async () => {
      const { performed } = await clean('verify-forged')
      const impostor = generateKeyPair('relay', 'svc')
      await appendAround('verify-forged', impostor, 'svc', performed, 2, 'claim')
      const report = await verify('verify-forged')
      expect(report.ok).toBe(false)
      expect(report.signatures.invalid).toBe(1)
      expect(report.firstBad).toMatchObject({ effect: performed, seq: 4, kind: 'claim' })
      expect(report.problems.map((p) => p.message).join('\n')).toContain(`effect ${performed} record 4 (claim, attempt 2): not signed by svc`)
    })

    it('an edited record (its body changed in the store) breaks its hash and the next link, naming the effect and the record', async () => {
      const { retried } = await clean('verify-edited')
      await harness.tamper('verify-edited', retried, 4, { edited: true })
      const report = await verify('verify-edited')
      expect(report.ok).toBe(false)
      const mine = report.problems.filter((p) => p.effect === retried)
      expect(mine.map((p) => p.seq)).toEqual(expect.arrayContaining([4]))
      expect(mine.map((p) => p.message).join('\n')).toMatch(/record 4 \(claim, attempt 2\): its hash does not match its content/)
      expect(mine.map((p) => p.message).join('\n')).toMatch(/record 4 \(claim, attempt 2\): not signed by svc/)
    })

    it('a deleted record is caught: the gap, the broken link and the decision row left without its record', async () => {
      const { retried } = await clean('verify-deleted')
      await harness.remove('verify-deleted', retried, 2)
      const report = await verify('verify-deleted')
      expect(report.ok).toBe(false)
      const text = report.problems.filter((p) => p.effect === retried).map((p) => p.message).join('\n')
      expect(text).toContain(`effect ${retried} record 3 (intend, attempt 2): record 2 is missing (deleted)`)
      expect(text).toMatch(/record 3 \(intend, attempt 2\): does not follow the record before it/)
      expect(text).toMatch(/attempt 1: decision row \(abort by agent-1, record 2\) without its record/)
    })

    it('performed and aborted for one attempt, written by a database attacker with a valid signature and chain, break the protocol and are caught', async () => {
      const { performed } = await clean('verify-both')
      await appendAround('verify-both', agent, 'agent-1', performed, 1, 'abort')
      const report = await verify('verify-both')
      expect(report.ok).toBe(false)
      expect(report.signatures.invalid).toBe(0)
      const text = report.problems.map((p) => p.message).join('\n')
      expect(text).toContain(`effect ${performed} record 4 (abort, attempt 1): attempt 1 was already decided by the claim in record 2: performed and aborted both recorded`)
      expect(report.problems.every((p) => p.effect === performed)).toBe(true)
    })

    it('a second attempt performed while the first was performed (an attacker replaying the effect) breaks the protocol', async () => {
      const { performed } = await clean('verify-twice')
      await appendAround('verify-twice', service, 'svc', performed, 2, 'claim')
      const report = await verify('verify-twice')
      expect(report.problems.map((p) => p.message).join('\n')).toContain(`effect ${performed} record 4 (claim, attempt 2): attempt 2 begins while attempt 1 is PERFORMED`)
    })
  })
}
