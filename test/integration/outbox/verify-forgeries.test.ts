/**
 * `outbox verify` against forgeries made as anyone with write access to the
 * store could make them, on a real store of each kind: rows rewritten in the
 * tables, the hash chain recomputed over them (record-hash.ts), the heads
 * and effects rows brought into line, so the chain alone sees nothing; and a
 * record whose stored bytes no longer parse, which every reader must report
 * as an integrity failure naming its journal and record.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { canonicalJson, type JsonObject } from '../../../src/core/canonical-json.js'
import type { OperatorConfig } from '../../../src/core/config/types.js'
import { IntegrityError } from '../../../src/core/errors.js'
import { Gate } from '../../../src/core/gate.js'
import { exportJournal } from '../../../src/core/outbox/export-file.js'
import { verifyExport, verifyStore } from '../../../src/core/outbox/verify-sources.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { gateWorld, messages, policy, refund } from '../../helpers/gate-world.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox } from '../../helpers/outbox-stores.js'
import { flipByte, forge, withData } from '../../helpers/tamper.js'

const operators: OperatorConfig[] = []
const trust = { operators, policy }

afterAll(() => dropOutboxDatabase())

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
] as const)('verify against forgeries on %s', (_name, make) => {
  it('args rewritten in the proposal, the chain recomputed and the effects row matched: the recomputed id differs', async () => {
    const w = await gateWorld(make)
    try {
      const small = await w.gate.submit(refund('12.00'))
      expect((await verifyStore(w.store, trust)).ok).toBe(true)
      await forge(w.h, (rows) => rows.map((r) => (r.state === 'PROPOSED' && r.effect_id === small.effectId ? withData(r, (d) => ({ ...d, effect: { ...d.effect, args: { ...d.effect.args, amount: '99999.00', to: 'acct_mallory' } } })) : r)))
      const report = await verifyStore(w.store, trust)
      expect(report.ok).toBe(false)
      expect(report.firstBad?.message).toMatch(new RegExp(`journal "agent-1" record 1 \\(PROPOSED\\) proposes effect ${small.effectId}, but its thread, target, action, args and key hash to [0-9a-f]{64}: the effect was rewritten after it was proposed`))
    } finally {
      await w.close()
    }
  })

  it('the effects row edited behind an untouched journal (args of a held effect, premises of a committed one): a finding naming the effect and the field', async () => {
    const w = await gateWorld(make)
    try {
      const held = await w.gate.submit(refund('900.00'))
      expect(held.status).toBe('held')
      const done = await w.gate.submit(refund('12.00', 'agent-2'))
      expect(done.status).toBe('committed')
      expect((await verifyStore(w.store, trust)).ok).toBe(true)
      const row = (id: string) => w.store.get(id).then((s) => s!.effect)
      await w.h.exec('UPDATE effects SET effect = ? WHERE id = ?', [canonicalJson({ ...(await row(held.effectId)), args: { amount: '99999.00', currency: 'USD', to: 'acct_mallory' } } as unknown as JsonObject), held.effectId])
      await w.h.exec('UPDATE effects SET effect = ? WHERE id = ?', [canonicalJson({ ...(await row(done.effectId)), premises: { balance: '1.00' } } as unknown as JsonObject), done.effectId])
      const report = await verifyStore(w.store, trust)
      expect(report.ok).toBe(false)
      expect(report.problems.map((p) => [p.effectId, p.message])).toEqual(
        expect.arrayContaining([
          [held.effectId, `effect ${held.effectId}: its effects row disagrees with its journal in args: the row was edited behind the journal (relays refuse to send it; the journal's PROPOSED record is what was signed)`],
          [done.effectId, `effect ${done.effectId}: its effects row disagrees with its journal in premises: the row was edited behind the journal (relays refuse to send it; the journal's PROPOSED record is what was signed)`],
        ]),
      )
      // The finding names fields, never the values written into them.
      expect(JSON.stringify(report.problems)).not.toContain('acct_mallory')
    } finally {
      await w.close()
    }
  })

  it('an effect a rule of the policy in force holds, authorized straight from PROPOSED by a gate without the policy', async () => {
    const w = await gateWorld(make)
    try {
      // A gate built by hand without the config's policy (or anyone who can write the tables): nothing holds the refund.
      const handle = await new Gate({ store: w.store, targets: [new CountingTarget('payments', 1)] }).submit(refund('900.00'))
      expect(handle.status).toBe('committed')
      const report = await verifyStore(w.store, trust)
      expect(report.ok).toBe(false)
      expect(report.firstBad).toMatchObject({ journal: 'agent-1', seq: 2, effectId: handle.effectId })
      expect(report.firstBad?.message).toBe(
        `journal "agent-1" record 2 (AUTHORIZED) authorizes effect ${handle.effectId} without operators, but rule "large-refunds" of the policy in force holds it (args.amount 900.00 USD is above 500.00): it should have been HELD for a release`,
      )
      // A small one, which no rule holds, is fine authorized that way.
      const small = await new Gate({ store: w.store, targets: [new CountingTarget('payments', 1)], policy }).submit(refund('12.00', 'agent-2'))
      expect(small.status).toBe('committed')
      expect(messages(await verifyStore(w.store, trust)).filter((m) => m.includes('agent-2'))).toEqual([])
    } finally {
      await w.close()
    }
  })

  it('an effect held under another rule than the one in force holds it by (whose quorum could be smaller)', async () => {
    const w = await gateWorld(make)
    try {
      const held = await w.gate.submit(refund('900.00'))
      expect(held.status).toBe('held')
      await forge(w.h, (rows) => rows.map((r) => (r.state === 'HELD' ? withData(r, (d) => ({ ...d, rule: 'petty-cash' })) : r)))
      const report = await verifyStore(w.store, trust)
      expect(messages(report)).toEqual([`journal "agent-1" record 2 (HELD) holds effect ${held.effectId} under rule "petty-cash", but the policy in force holds it under rule "large-refunds"`])
    } finally {
      await w.close()
    }
  })

  describe('a record that no longer parses', () => {
    it('one flipped byte in its data: verify, history and show fail as integrity errors naming journal and record', async () => {
      const w = await gateWorld(make)
      try {
        const small = await w.gate.submit(refund('12.00'))
        await w.gate.submit(refund('13.00'))
        const rows = await w.h.rows()
        await w.h.rewrite(rows.map((r) => (r.seq === 3 ? flipByte(r) : r)))
        const report = await verifyStore(w.store, trust)
        expect(report.ok).toBe(false)
        expect(report.firstBad).toMatchObject({ journal: 'agent-1', seq: 3 })
        expect(report.firstBad?.message).toMatch(/^journal "agent-1" record 3 has data that is not JSON \(.+\); the record was altered or damaged; verification stopped there, and nothing after it was read$/)
        expect(report.stopped).toEqual(report.firstBad)
        const history = w.store.history(small.effectId)
        await expect(history).rejects.toBeInstanceOf(IntegrityError)
        await expect(history).rejects.toThrow(/^journal "agent-1" record 3 has data that is not JSON/)
      } finally {
        await w.close()
      }
    })

    it('with the chain recomputed over the damaged text: recovery\'s scan and history name the record too', async () => {
      const w = await gateWorld(make)
      try {
        const held = await w.gate.submit(refund('900.00'))
        expect(held.status).toBe('held')
        await forge(w.h, (rows) => rows.map((r) => (r.effect_id === held.effectId && r.state === 'PROPOSED' ? flipByte(r) : r)), { effects: false })
        for (const read of [() => w.store.scanInFlight(), () => w.store.history(held.effectId)]) {
          const p = read()
          await expect(p).rejects.toBeInstanceOf(IntegrityError)
          await expect(p).rejects.toThrow(/^journal "agent-1" record 1 has data that is not JSON/)
        }
        expect((await verifyStore(w.store, trust)).firstBad).toMatchObject({ journal: 'agent-1', seq: 1 })
      } finally {
        await w.close()
      }
    })

    it('in an export: the line is named by its journal and record', async () => {
      const w = await gateWorld(make)
      try {
        await w.gate.submit(refund('12.00'))
        const file = join(mkdtempSync(join(tmpdir(), 'interlock-export-')), 'journal.jsonl')
        await exportJournal(w.store, file, new Date())
        const lines = readFileSync(file, 'utf8').split('\n')
        // Line 4 is record 3; one byte inside its data.
        lines[3] = lines[3]!.replace('"data":{', '"data":[')
        writeFileSync(file, lines.join('\n'))
        const report = await verifyExport(file, trust)
        expect(report.ok).toBe(false)
        expect(report.firstBad).toMatchObject({ journal: 'agent-1', seq: 3 })
        expect(report.firstBad?.message).toContain(`export file ${file} line 4 (journal "agent-1" record 3) is not JSON`)
      } finally {
        await w.close()
      }
    })
  })

})

describe('an effects row that no longer parses (SQLite keeps the row\'s JSON as text)', () => {
  it('a lookup fails as an integrity error naming the effect and the column', async () => {
    const w = await gateWorld(sqliteOutbox)
    try {
      const small = await w.gate.submit(refund('12.00'))
      await w.h.exec("UPDATE effects SET effect = '[' || substr(effect, 2) WHERE id = ?", [small.effectId])
      const get = w.store.get(small.effectId)
      await expect(get).rejects.toBeInstanceOf(IntegrityError)
      await expect(get).rejects.toThrow(`the effects row of effect ${small.effectId}: its effect column is not a JSON object; the row was altered or damaged`)
    } finally {
      await w.close()
    }
  })
})
