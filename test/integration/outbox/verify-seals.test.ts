/**
 * Seals (crypto/seal.ts): a signing writer signs one seal per commit over
 * the hashes of the records it wrote, and `outbox verify` (verify-seals.ts)
 * proves every record past PROPOSED is in a seal of a trusted writer. Each
 * forgery is made as anyone with write access to the store could make it,
 * on a real store of each kind: rows rewritten, the chain recomputed, heads
 * and effects rows brought into line, seal rows inserted or edited.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../src/core/canonical-json.js'
import type { OperatorConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { sealer, type StoredSeal } from '../../../src/core/crypto/seal.js'
import { exportJournal } from '../../../src/core/outbox/export-file.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { verifyExport, verifyStore } from '../../../src/core/outbox/verify-sources.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { gateWorld, messages, policy, refund } from '../../helpers/gate-world.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'
import { forge } from '../../helpers/tamper.js'

const relayKey = generateKeyPair('relay', 'relay-1')
const rogueKey = generateKeyPair('relay', 'relay-1')
const alice = generateKeyPair('operator', 'alice')
const operators: OperatorConfig[] = [{ name: 'alice', publicKey: alice.publicKey }]
const relays = [{ name: 'relay-1', publicKey: relayKey.publicKey }]
const noKeys = { operators, policy }
const withKeys = { operators, policy, relays }

afterAll(() => dropOutboxDatabase())

/** A store of the kind and an inline gate sealing its commits with the relay's key. */
const world = (make: () => Promise<OutboxHarness>) => gateWorld(make, { signing: { key: relayKey, id: 'relay-1' } })

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
] as const)('seals on %s', (_name, make) => {
  it('one seal per commit covers every record a sealing gate and a relay wrote; group commit makes it one per batch; unchecked without the key', async () => {
    const w = await world(make)
    try {
      // Twenty effects submitted at once through the gate: its group commit joins them, so far fewer seals than records.
      await Promise.all(Array.from({ length: 20 }, (_, i) => w.gate.submit(refund(`${10 + i}.00`, `agent-${i % 4}`))))
      // And an outbox drained by a relay, which seals its own commits.
      const outbox = new Outbox({ store: w.store, targets: [w.payments, w.mail] })
      const handles = await Promise.all(Array.from({ length: 10 }, (_, i) => outbox.submit(refund(`${40 + i}.00`, 'relayed'))))
      const relay = new Relay({ store: w.store, targets: [w.payments, w.mail], policy, relayId: 'relay-1', key: relayKey, pollMs: 10, retry: { maxAttempts: 1, backoffMs: 0 } })
      await relay.start()
      expect((await Promise.all(handles.map((h) => h.result()))).every((o) => o.status === 'committed')).toBe(true)
      await relay.stop()
      await outbox.close()

      const rows = await w.h.rows()
      const seals = await w.store.seals()
      const sealed = new Set(seals.flatMap((s) => s.statement.records))
      // Every record but the outbox agent's proposals is in a seal; each hash in one seal only.
      const agentProposals = rows.filter((r) => r.journal === 'relayed' && r.state === 'PROPOSED')
      expect(rows.filter((r) => !sealed.has(r.hash))).toEqual(agentProposals)
      expect(seals.reduce((n, s) => n + s.statement.records.length, 0)).toBe(sealed.size)
      expect(seals.length).toBeLessThan(sealed.size / 2)
      // Each writer's seals form one run, numbered from 1, each naming the one before.
      const gateRun = seals.filter((s) => s.statement.run === seals[0]!.statement.run)
      expect(gateRun.map((s) => s.statement.n)).toEqual(gateRun.map((_, i) => i + 1))

      const report = await verifyStore(w.store, withKeys)
      expect(report.problems).toEqual([])
      expect(report.seals).toEqual({ valid: seals.length, invalid: 0, unchecked: 0 })
      expect(report.writers).toMatchObject({ sealed: sealed.size, valid: sealed.size, unsigned: 0, invalid: 0 })
      const blind = await verifyStore(w.store, noKeys)
      expect(blind).toMatchObject({ ok: true, seals: { valid: 0, unchecked: seals.length }, writers: { valid: 0, unchecked: sealed.size } })
    } finally {
      await w.close()
    }
  })

  it('a forged DISPATCHED → FAILED with the chain recomputed is in no seal, and neither is any record after it in its journal', async () => {
    const w = await world(make)
    try {
      const a = await w.gate.submit(refund('12.00'))
      const b = await w.gate.submit(refund('13.00'))
      const rows = await forge(w.h, (rows) =>
        rows.map((r) => (r.effect_id === a.effectId && r.state === 'COMMITTED' ? { ...r, state: 'FAILED', data: canonicalJson({ reason: 'card declined' }) } : r)),
      )
      const failed = rows.find((r) => r.state === 'FAILED')!
      const report = await verifyStore(w.store, withKeys)
      expect(report.ok).toBe(false)
      // b's records follow the forged one: their hashes changed with the chain, so their seals no longer cover them
      // (its proposal needs none, and its authorization is the policy's decision, judged again).
      expect(messages(report)).toEqual([
        `journal "agent-1" record ${failed.seq} of effect ${a.effectId} carries no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`,
        `journal "agent-1" records 7, 8 of effect ${b.effectId} carry no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`,
      ])
      // Without a relay key it cannot be told.
      expect(await verifyStore(w.store, noKeys)).toMatchObject({ ok: true })
    } finally {
      await w.close()
    }
  })

  it('a record appended outside any seal, and one covered by a seal under a key nobody trusts, are named', async () => {
    const w = await world(make)
    try {
      w.mail.faults.push({ kind: 'unknown' })
      const m = await w.gate.submit({ thread: 'mailer', target: 'mail', action: 'send', args: { to: 'a@example.com' } })
      expect(m.status).toBe('ambiguous')
      const before = await w.h.rows()
      const last = before.at(-1)!
      // AMBIGUOUS → FAILED appended at the journal's end: a legal move, no operator's resolution, no seal.
      const rows = await forge(w.h, (rows) => [...rows, { ...last, seq: last.seq + 1, state: 'FAILED', data: canonicalJson({ reason: 'never sent' }) }])
      const forged = rows.at(-1)!
      const unsealed = `journal "mailer" record ${forged.seq} of effect ${m.effectId} carries no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`
      expect(messages(await verifyStore(w.store, withKeys))).toEqual([`journal "mailer" record ${forged.seq} (FAILED) resolves an AMBIGUOUS effect without an operator's signed resolution`, unsealed])

      // The forger seals it with a key of their own under the trusted relay's name.
      const rogue = sealer({ key: rogueKey, id: 'relay-1', role: 'relay' }).seal([{ hash: forged.hash, at: forged.at }])
      await w.h.exec('INSERT INTO seals (at, seal) VALUES (?, ?)', [forged.at, JSON.stringify(rogue)])
      const report = await verifyStore(w.store, withKeys)
      expect(report.seals).toMatchObject({ invalid: 1 })
      expect(messages(report)).toContainEqual(expect.stringMatching(/^seal 1 of relay relay-1 \(run .+\) does not verify with relay relay-1's trusted key \(forged or altered\); the records it lists are not covered by it$/))
      expect(messages(report)).toContainEqual(unsealed)
    } finally {
      await w.close()
    }
  })

  it('a seal copied in again, a forged seal in a real one\'s place, and a seal whose hash list omits a record are each found', async () => {
    const w = await world(make)
    try {
      await w.gate.submit(refund('12.00'))
      await w.gate.submit(refund('13.00'))
      // Two commits per submit: PROPOSED, AUTHORIZED and DISPATCHED before the send, COMMITTED after it.
      const seals = await w.store.seals()
      expect(seals.map((s) => s.statement.records.length)).toEqual([3, 1, 3, 1])
      expect(await verifyStore(w.store, withKeys)).toMatchObject({ ok: true, seals: { valid: 4 } })

      // Replayed: the first seal inserted a second time.
      await w.h.exec('INSERT INTO seals (at, seal) VALUES (?, ?)', [seals[0]!.statement.at, JSON.stringify(seals[0])])
      const replayed = await verifyStore(w.store, withKeys)
      expect(messages(replayed)).toEqual([expect.stringMatching(/^seal 1 of relay relay-1 \(run .+\) appears twice: copied in again; the second is not trusted$/)])
      await w.h.exec('DELETE FROM seals WHERE id = (SELECT max(id) FROM seals)')

      // A second seal 2 in the gate's run (signed by a rogue key, listing nothing real).
      const fake: StoredSeal = { ...seals[1]!, statement: { ...seals[1]!.statement, records: ['0'.repeat(64)] } }
      await w.h.exec('INSERT INTO seals (at, seal) VALUES (?, ?)', [fake.statement.at, JSON.stringify(fake)])
      expect(messages(await verifyStore(w.store, withKeys))).toEqual([expect.stringMatching(/^seal 2 of relay relay-1 \(run .+\) appears twice with different contents: one is forged; the second is not trusted$/)])
      await w.h.exec('DELETE FROM seals WHERE id = (SELECT max(id) FROM seals)')

      // The third seal's list with its DISPATCHED record's hash taken out: the seal no longer verifies, so none of its records is covered.
      const rows = await w.h.rows()
      const dispatched = rows.filter((r) => r.state === 'DISPATCHED').at(-1)!
      const third = seals[2]!
      const cut: StoredSeal = { ...third, statement: { ...third.statement, records: third.statement.records.filter((h) => h !== dispatched.hash) } }
      await w.h.exec('UPDATE seals SET seal = ? WHERE id = (SELECT min(id) + 2 FROM seals)', [JSON.stringify(cut)])
      const omitted = await verifyStore(w.store, withKeys)
      expect(omitted.ok).toBe(false)
      expect(messages(omitted)).toEqual([
        expect.stringMatching(/^seal 3 of relay relay-1 \(run .+\) does not verify with relay relay-1's trusted key \(forged or altered\)/),
        expect.stringContaining(`record ${dispatched.seq} of effect ${dispatched.effect_id} carries no seal or signature of a trusted writer`),
      ])
    } finally {
      await w.close()
    }
  })

  it('an export carries the seals: it verifies on its own, and one with a seal line taken out names the records it covered', async () => {
    const w = await world(make)
    try {
      const a = await w.gate.submit(refund('12.00'))
      const dir = mkdtempSync(join(tmpdir(), 'interlock-seal-export-'))
      const file = join(dir, 'journal.jsonl')
      await exportJournal(w.store, file, new Date())
      expect(await verifyExport(file, withKeys)).toMatchObject({ ok: true, seals: { valid: 2 }, writers: { sealed: 4 } })
      const { readFileSync, writeFileSync } = await import('node:fs')
      const cut = join(dir, 'cut.jsonl')
      writeFileSync(cut, readFileSync(file, 'utf8').split('\n').filter((l) => !l.startsWith('{"seal"')).join('\n'))
      const report = await verifyExport(cut, withKeys)
      expect(messages(report)).toEqual([expect.stringContaining(`records 3, 4 of effect ${a.effectId} carry no seal or signature of a trusted writer`)])
    } finally {
      await w.close()
    }
  })
})
