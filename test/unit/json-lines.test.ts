/**
 * Export files are JSON Lines: one record per line, split on "\n" alone.
 * JSON strings may carry U+2028 and U+2029 raw; node:readline (Node.js 22 on)
 * ends a line at each, which cut records in two (found by the payload-bytes
 * property test on Node.js 24). Lines are now written with both escaped and
 * read by splitting on "\n" only.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { toEffect } from '../../src/core/effect.js'
import { exportJournal, readExport } from '../../src/core/outbox/export-file.js'
import { jsonLine, lines } from '../../src/core/outbox/json-lines.js'
import { verifyExport } from '../../src/core/outbox/verify-sources.js'
import { proposal } from '../../src/core/gate-context.js'
import { openStore } from '../../src/core/stores/open.js'

const SEPARATED = 'line\u2028separator, paragraph\u2029separator, next line\u0085, CR\r and LF\n'

async function all(input: AsyncIterable<Buffer | string>): Promise<string[]> {
  const out: string[] = []
  for await (const l of lines(input)) out.push(l)
  return out
}

describe('JSON Lines', () => {
  it('writes U+2028 and U+2029 escaped: the same JSON value, on one line', () => {
    const text = jsonLine({ s: SEPARATED })
    expect(text).not.toMatch(/[\u2028\u2029\n]/)
    expect(JSON.parse(text)).toEqual({ s: SEPARATED })
  })

  it('reads lines split on "\\n" alone, whatever the chunks, raw separators and multibyte characters included', async () => {
    // As an earlier writer left them: the separators raw inside the JSON text.
    const raw = `${JSON.stringify({ s: SEPARATED })}\r\n${JSON.stringify({ t: 'é😀' })}\n${JSON.stringify({ u: 3 })}`
    const bytes = Buffer.from(raw, 'utf8')
    // One byte at a time: every multibyte character and every separator is cut across chunks.
    const chunks = [...bytes].map((b) => Buffer.from([b]))
    const read = await all(Readable.from(chunks))
    expect(read.map((l) => JSON.parse(l))).toEqual([{ s: SEPARATED }, { t: 'é😀' }, { u: 3 }])
  })

  it('an export whose args carry U+2028 and U+2029 reads back and verifies, record for record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-jsonl-'))
    const store = await openStore({ kind: 'sqlite', path: join(dir, 'journal.db') })
    try {
      const effect = toEffect({ thread: 't', target: 'notes', action: 'write', args: { text: SEPARATED } })
      expect((await store.append([{ effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, 1), effect, tier: 1 }]))[0]!.ok).toBe(true)
      const file = join(dir, 'export.jsonl')
      await exportJournal(store, file, new Date())
      const report = await verifyExport(file, { operators: [] })
      expect(report.problems).toEqual([])
      const records = []
      for await (const r of readExport(file).records) records.push(r)
      expect(records).toHaveLength(1)
      expect(canonicalJson((records[0]!.data.effect as { args: unknown }).args)).toBe(canonicalJson(effect.args))
      // A file an earlier version wrote, separators raw, reads the same.
      const rawFile = join(dir, 'raw.jsonl')
      const header = { format: 'interlock-journal-export/v1', exportedAt: new Date().toISOString(), store: 'sqlite' }
      writeFileSync(rawFile, [header, records[0], { end: { records: 1, effects: { [effect.id]: { state: 'PROPOSED', seq: 1 } } } }].map((v) => JSON.stringify(v)).join('\n') + '\n')
      expect((await verifyExport(rawFile, { operators: [] })).problems).toEqual([])
    } finally {
      await store.close()
    }
  })
})
