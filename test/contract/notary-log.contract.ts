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
import { GENESIS, recordHash, signRecord, type NotaryKind, type SignedRecord } from '../../src/core/notary/records.js'
import type { NotaryStore } from '../../src/core/notary/store.js'

export interface NotaryStoreHarness {
  /** A fresh, empty store; `name` tells one store of a test from another. */
  open(name: string): Promise<NotaryStore>
  /** The same store again, as a restarted notary opens it. */
  reopen(name: string): Promise<NotaryStore>
  /** Changes a stored record's body behind the notary's back. */
  tamper(name: string, effect: string, seq: number, body: JsonObject): Promise<void>
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
      expect((await tampered.verify(e)).join('\n')).toMatch(/record 3's hash does not match[\s\S]*record 3 \(performed\) is not signed by svc/)
      await tampered.close()
    })

    it('answers a malformed body as malformed', async () => {
      const log = await open('malformed')
      expect((await log.write({ effect: 'x', kind: 'claim' })).status).toBe('malformed')
      expect((await log.write(null)).status).toBe('malformed')
      await log.close()
    })
  })
}
