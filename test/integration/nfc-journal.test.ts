/**
 * Journals written while canonical JSON normalised every string to NFC
 * (test/fixtures/nfc-journal/README.md) still verify now that args are
 * journaled, signed and sent exactly: their text is NFC already, so the
 * record hashes, the effect digests operators signed and the receipt digests
 * relays signed come out the same, and the effect ids (still computed over
 * NFC) match.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { JsonObject } from '../../src/core/canonical-json.js'
import type { OperatorConfig, PolicyRuleConfig } from '../../src/core/config/types.js'
import { effectId, type Effect } from '../../src/core/effect.js'
import { readExport } from '../../src/core/outbox/export-file.js'
import { verifyExport } from '../../src/core/outbox/verify-sources.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'

const dir = join(import.meta.dirname, '../fixtures/nfc-journal')
const file = join(dir, 'journal.jsonl')
const trust = JSON.parse(readFileSync(join(dir, 'trust.json'), 'utf8')) as { operators: OperatorConfig[]; relays: { name: string; publicKey: string }[]; rules: PolicyRuleConfig[] }

describe('a journal written with NFC text', () => {
  it('verifies: chain, release, resolution and relay receipt', async () => {
    const report = await verifyExport(file, { operators: trust.operators, relays: trust.relays, policy: new RulesPolicy(trust.rules) })
    // Written before records were signed: with the relay key its unsigned records are reported as such (an
    // anchor taken with --cover-unsigned vouches for them), and nothing else is wrong.
    expect(report.problems.filter((p) => p.kind !== 'unsigned')).toEqual([])
    expect(report.writers.unsigned).toBeGreaterThan(0)
    // The release (in its HELD record and again in the AUTHORIZED record it completed) and the resolution.
    expect(report.signatures).toEqual({ valid: 3, invalid: 0 })
    expect(report.receipts).toEqual({ valid: 1, invalid: 0, unchecked: 0 })
  })

  it('holds NFC text, and each effect id is what the decomposed submission gets today', async () => {
    const proposed: Effect[] = []
    for await (const r of readExport(file).records) if (r.state === 'PROPOSED') proposed.push(r.data.effect as unknown as Effect)
    const note = proposed.find((e) => e.target === 'notes')!
    expect(note.args).toEqual({ amount: '500.00', 'cl\u00e9': 'Am\u00e9lie', note: 'Caf\u00e9' })
    for (const e of proposed) expect(effectId(e)).toBe(e.id)
    const submitted: JsonObject = { note: 'Cafe\u0301', amount: '500.00', 'cle\u0301': 'Ame\u0301lie' }
    expect(effectId({ thread: 'agent-nfc', target: 'notes', action: 'write', args: submitted })).toBe(note.id)
  })
})
