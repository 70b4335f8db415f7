/**
 * `outbox checkpoint` (outbox/checkpoint.ts) on a real store of each kind:
 * each journal's settled history is verified once and pinned under an
 * operator's signature; the next checkpoint reads only what came after the
 * pin; `outbox verify` fails a journal that no longer holds a pinned record
 * (a record rewritten before it with the chain recomputed, which nothing
 * else in the store shows) or that ends before it; and recovery, which no
 * longer reads settled history, leaves it to them.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { OperatorConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { IntegrityError } from '../../../src/core/errors.js'
import { checkpointJournals } from '../../../src/core/outbox/checkpoint.js'
import { pruneJournals } from '../../../src/core/outbox/prune.js'
import { verifyStore } from '../../../src/core/outbox/verify-sources.js'
import type { JournalRecord } from '../../../src/core/stores/store.js'
import { gateWorld, messages, policy, refund, type GateWorld } from '../../helpers/gate-world.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox } from '../../helpers/outbox-stores.js'
import { forge, withData } from '../../helpers/tamper.js'

const alice = generateKeyPair('operator', 'alice')
const operators: OperatorConfig[] = [{ name: 'alice', publicKey: alice.publicKey }]
const trust = { operators, policy }
let clock = Date.UTC(2030, 0, 1)
const checkpoint = (w: GateWorld) => checkpointJournals(w.store, { ...trust, key: alice, now: new Date(clock++) })

afterAll(() => dropOutboxDatabase())

async function records(w: GateWorld): Promise<JournalRecord[]> {
  const out: JournalRecord[] = []
  for await (const r of w.store.records()) out.push(r)
  return out
}

/**
 * agent-1: two refunds committed, a mail no one can know (AMBIGUOUS), one more refund;
 * agent-2: two refunds committed. Records: agent-1 1-8 settled, 9-12 the mail, 13-16; agent-2 1-8.
 */
async function world(make: typeof sqliteOutbox): Promise<GateWorld & { ambiguous: string }> {
  const w = await gateWorld(make)
  await w.gate.submit(refund('10.00'))
  await w.gate.submit(refund('11.00'))
  w.mail.faults.push({ kind: 'unknown' })
  const mail = await w.gate.submit({ thread: 'agent-1', target: 'mail', action: 'send', args: { to: 'a@example.com' } })
  expect(mail.status).toBe('ambiguous')
  await w.gate.submit(refund('12.00'))
  await w.gate.submit(refund('20.00', 'agent-2'))
  await w.gate.submit(refund('21.00', 'agent-2'))
  return Object.assign(w, { ambiguous: mail.effectId })
}

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
] as const)('outbox checkpoint on %s', (_name, make) => {
  it("pins each journal's settled prefix, once; the next checkpoint reads from the pins on; verify accepts it", async () => {
    const w = await world(make)
    try {
      const first = await checkpoint(w)
      // Everything read; agent-1 pinned before the AMBIGUOUS mail (8), agent-2 whole (8).
      expect(first.outcome).toMatchObject({ read: { journals: 2, records: 24 }, journals: 2, records: 16, effects: 4, checkpoint: { signer: 'alice', role: 'operator' } })
      const stored = await w.store.checkpoints()
      expect(stored).toHaveLength(1)
      expect(stored[0]!.document).toMatchObject({ heads: [{ journal: 'agent-1', seq: 8 }, { journal: 'agent-2', seq: 8 }] })
      expect(stored[0]!.document).not.toHaveProperty('archive')

      // Nothing new settled before the open mail: agent-1 is read from its pin on, agent-2 not at all.
      const second = await checkpoint(w)
      expect(second.outcome).toMatchObject({ read: { journals: 1, records: 8 }, journals: 0 })
      expect(await w.store.checkpoints()).toHaveLength(1)

      await w.gate.submit(refund('22.00', 'agent-2'))
      const third = await checkpoint(w)
      expect(third.outcome).toMatchObject({ read: { journals: 2, records: 8 + 4 }, journals: 1, records: 4, effects: 1 })

      const report = await verifyStore(w.store, trust)
      expect(messages(report)).toEqual([])
      expect(report.checkpoints).toEqual({ valid: 2, invalid: 0, unchecked: 0 })
    } finally {
      await w.close()
    }
  })

  it('a record rewritten before a pin, the chain recomputed over it and every row matched: verify names the checkpoint', async () => {
    const w = await world(make)
    try {
      await checkpoint(w)
      // A settled refund's receipt rewritten: its id, the chain, the heads and the rows all still agree.
      await forge(w.h, (rows) => rows.map((r) => (r.journal === 'agent-2' && r.seq === 4 ? withData(r, (d) => ({ ...d, receipt: { refund: 're_forged' } })) : r)))
      const report = await verifyStore(w.store, trust)
      expect(report.ok).toBe(false)
      expect(report.firstBad).toMatchObject({ journal: 'agent-2', seq: 8 })
      expect(report.firstBad?.message).toMatch(/^journal "agent-2" record 8 \(COMMITTED\) is not the record checkpoint [0-9a-f]{12}… \(signed by operator alice at .+\) pinned as the end of the settled history it verified: the journal was rewritten at or before it$/)
      // The next checkpoint, reading from the pin, finds the chain no longer leads there.
      await w.gate.submit(refund('22.00', 'agent-2'))
      await expect(checkpoint(w)).rejects.toThrow(/^not checkpointed: the journals do not verify .*journal "agent-2" record 9 .*previous-hash does not match record 8/)
      // The pin is what shows it: without the checkpoint row, the forgery verifies.
      await w.h.exec('DELETE FROM checkpoints')
      expect(messages(await verifyStore(w.store, trust))).toEqual([])
    } finally {
      await w.close()
    }
  })

  it('a journal cut back below its pin, its head and rows rewritten to match: verify says records were removed from its end', async () => {
    const w = await world(make)
    try {
      await checkpoint(w)
      const last = (await records(w)).filter((r) => r.journal === 'agent-2' && r.seq > 4)
      await forge(w.h, (rows) => rows.filter((r) => !(r.journal === 'agent-2' && r.seq > 4)))
      await w.h.exec('DELETE FROM effects WHERE id = ?', [last[0]!.effectId])
      const report = await verifyStore(w.store, trust)
      expect(messages(report)).toEqual([expect.stringMatching(/^journal "agent-2" ends at record 4, but checkpoint [0-9a-f]{12}… \(signed by operator alice at .+\) pinned its record 8: records were removed from its end$/)])
    } finally {
      await w.close()
    }
  })

  it('settled history is verified once: an edit before a pin is not read again by checkpoint or recovery, and verify still finds it', async () => {
    const w = await world(make)
    try {
      await checkpoint(w)
      // Record 2 of agent-1 (settled, before the pin) altered in place.
      await w.h.exec(`UPDATE journal_records SET data = ? WHERE journal = 'agent-1' AND seq = 2`, ['{"altered":true}'])
      const again = await checkpoint(w)
      expect(again.outcome.read.records).toBe(8)
      // Recovery reads the open mail's own records only.
      const scan = await w.store.scanInFlight()
      expect(scan.effects.map((s) => [s.effect.id, s.state])).toEqual([[w.ambiguous, 'AMBIGUOUS']])
      expect(scan.recordsRead).toBe(4)
      const report = await verifyStore(w.store, trust)
      expect(report.firstBad).toMatchObject({ journal: 'agent-1', seq: 2 })
      expect(report.firstBad?.message).toMatch(/content does not match its hash/)
    } finally {
      await w.close()
    }
  })

  it('refuses, writing nothing, when what it reads does not verify', async () => {
    const w = await world(make)
    try {
      await checkpoint(w)
      await w.h.exec(`UPDATE journal_records SET data = ? WHERE journal = 'agent-1' AND seq = 13`, ['{"altered":true}'])
      const err = await checkpoint(w).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(IntegrityError)
      expect((err as Error).message).toMatch(/journal "agent-1" record 13 .*content does not match its hash/)
      expect(await w.store.checkpoints()).toHaveLength(1)
    } finally {
      await w.close()
    }
  })

  it("goes on from a prune's checkpoint, and verify accepts a journal pruned and pinned by both kinds", async () => {
    const w = await world(make)
    try {
      await checkpoint(w)
      const archive = join(mkdtempSync(join(tmpdir(), 'interlock-checkpoint-')), 'archive.jsonl')
      const pruned = await pruneJournals(w.store, { ...trust, olderThanMs: 0, now: new Date(clock++), archive, key: alice })
      expect(pruned.outcome).toMatchObject({ journals: 2, records: 16 })
      await w.gate.submit(refund('22.00', 'agent-2'))
      const next = await checkpoint(w)
      expect(next.outcome).toMatchObject({ read: { records: 8 + 4 }, journals: 1, records: 4 })
      expect(messages(await verifyStore(w.store, trust))).toEqual([])
    } finally {
      await w.close()
    }
  })
})
