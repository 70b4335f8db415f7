/**
 * The export format (`outbox export`), JSON Lines so a journal of any size
 * streams in and out:
 *   line 1     {"format":"interlock-journal-export/v1","exportedAt":"...","store":"sqlite"}
 *   line 2     {"checkpoints":[...]}   the store's checkpoints (checkpoint-file.ts), when it has any
 *   then       {"seal":{...}}          one line per stored seal (crypto/seal.ts), in the order written
 *   then       one JournalRecord per line, in (journal, seq) order, exactly as stored
 *   last line  {"end":{"records":N,"effects":{"<id>":{"state":"...","seq":N}}}}
 * The end line carries where every effect's records end (the store's effects
 * table), so a file cut short, or a record dropped from the end of a journal,
 * fails verification like the store itself would. The checkpoints and seals
 * come before the records, so a pruned journal, which starts after its
 * checkpoint's head, verifies from the file alone, its writers' seals with it. `outbox prune`'s archive is a file of this
 * format too: the records it removed, and the checkpoints they follow.
 */
import { createHash } from 'node:crypto'
import { closeSync, createReadStream, createWriteStream, fsyncSync } from 'node:fs'
import { once } from 'node:events'
import { IntegrityError, NotFoundError } from '../errors.js'
import type { State } from '../lifecycle.js'
import type { Effect, Tier } from '../effect.js'
import type { JournalRecord, Store } from '../stores/store.js'
import { jsonLine, lines } from './json-lines.js'
import { openNewFile } from './new-file.js'

export const EXPORT_FORMAT = 'interlock-journal-export/v1'

/** Where each effect's records end; from a store, also the row's own effect and tier (what a relay would read). */
export type Projection = Map<string, ProjectedEffect>
export interface ProjectedEffect {
  state: State
  seq: number
  row?: { effect: Effect; tier: Tier }
}

/** Every effect's last record, from the store's effects table. */
export async function projectionOf(store: Store, options: { rows?: boolean } = {}): Promise<Projection> {
  const p: Projection = new Map()
  // With rows: what each effects row says of its effect, which verify compares with the journal (never exported).
  for (const s of await store.list()) p.set(s.effect.id, options.rows ? { state: s.state, seq: s.seq, row: { effect: s.effect, tier: s.tier } } : { state: s.state, seq: s.seq })
  return p
}

export interface ExportSummary {
  records: number
  effects: number
}

/** Writes the export to a new file (never one that exists). */
export async function exportJournal(store: Store, path: string, now: Date): Promise<{ path: string } & ExportSummary> {
  const content = await exportContent(store, now)
  const { records } = await writeExport(path, 'export', content)
  return { path, records, effects: content.projection.size }
}

/** Writes the export to a stream the caller owns and ends (stdout: `outbox export --out -`). */
export async function exportJournalTo(store: Store, out: NodeJS.WritableStream, now: Date): Promise<ExportSummary> {
  const content = await exportContent(store, now)
  const records = await writeLines(out, content, () => {})
  return { records, effects: content.projection.size }
}

async function exportContent(store: Store, now: Date): Promise<ExportContent> {
  // The projection first: records appended meanwhile then show as extra, never as missing.
  const projection = await projectionOf(store)
  const checkpoints = (await store.checkpoints()).map((c) => c.document)
  return { store: store.kind, now, checkpoints, seals: await store.seals(), records: store.records(), keep: (r) => projection.has(r.effectId), projection }
}

export interface ExportContent {
  store: string
  now: Date
  checkpoints: readonly unknown[]
  /** The seals the records' writers made (Store.seals): a seal covers records of any journal, so all of them go. */
  seals: readonly unknown[]
  records: AsyncIterable<JournalRecord>
  keep: (r: JournalRecord) => boolean
  projection: Projection
  /** Made durable (fsync) before the call returns: an archive is written before what it holds is deleted. */
  durable?: boolean
}

/** Writes a file of the export format, never over an existing one; returns the records written and the file's SHA-256. */
export async function writeExport(path: string, what: 'export' | 'archive', c: ExportContent): Promise<{ records: number; sha256: string }> {
  const fd = openNewFile(path, what, what === 'export' ? 'E_EXPORT_FILE' : 'E_ARCHIVE_FILE')
  const out = createWriteStream('', { fd, autoClose: false })
  const digest = createHash('sha256')
  let records: number
  try {
    records = await writeLines(out, c, (line) => digest.update(line))
  } finally {
    out.end()
    await once(out, 'finish')
    try {
      if (c.durable) fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  }
  return { records, sha256: digest.digest('hex') }
}

/** The export's lines, waiting on the stream when it is full; returns the records written. */
async function writeLines(out: NodeJS.WritableStream, c: ExportContent, seen: (line: string) => void): Promise<number> {
  const write = async (line: string) => {
    seen(`${line}\n`)
    if (!out.write(`${line}\n`)) await once(out, 'drain')
  }
  let records = 0
  await write(jsonLine({ format: EXPORT_FORMAT, exportedAt: c.now.toISOString(), store: c.store }))
  if (c.checkpoints.length > 0) await write(jsonLine({ checkpoints: c.checkpoints }))
  for (const seal of c.seals) await write(jsonLine({ seal }))
  for await (const r of c.records) {
    if (!c.keep(r)) continue
    await write(jsonLine(r))
    records++
  }
  await write(jsonLine({ end: { records, effects: Object.fromEntries(c.projection) } }))
  return records
}

export interface ExportReader {
  records: AsyncIterable<JournalRecord>
  /** Filled when the records have been read: the end line's projection, or undefined when it is missing. */
  projection(): Projection | undefined
  /** Filled before the first record is yielded: the checkpoints line's documents (none when there is no such line). */
  checkpoints(): readonly unknown[]
  /** Filled before the first record is yielded: the seal lines' seals. */
  seals(): readonly unknown[]
  problems: string[]
}

export function readExport(path: string): ExportReader {
  let projection: Projection | undefined
  let checkpoints: readonly unknown[] = []
  const seals: unknown[] = []
  const problems: string[] = []
  async function* records(): AsyncIterable<JournalRecord> {
    const input = createReadStream(path)
    const opened = new Promise<void>((resolve, reject) => {
      input.once('open', () => resolve())
      input.once('error', (e) =>
        reject(new NotFoundError(`export file ${path} cannot be read: ${e.message}`, { hint: 'Make one with `interlock outbox export --out <file>`.', cause: e })),
      )
    })
    await opened
    let n = 0
    let ended = false
    // The last record read: names where a line that cannot be read sits.
    let previous: { journal: string; seq: number } | undefined
    for await (const line of lines(input)) {
      n++
      if (line.trim() === '') continue
      let v: Record<string, unknown>
      try {
        v = JSON.parse(line) as Record<string, unknown>
      } catch {
        if (n === 1) throw new IntegrityError(`export file ${path} line 1 is not JSON; the file was altered or cut`)
        throw unreadableLine(path, n, line, previous, 'is not JSON')
      }
      if (n === 1) {
        if (v.format !== EXPORT_FORMAT) throw new IntegrityError(`export file ${path} is not an Interlock journal export (${EXPORT_FORMAT})`)
        continue
      }
      if (ended) {
        problems.push(`export file ${path} line ${n} follows the end line`)
        continue
      }
      if (Array.isArray(v.checkpoints) && previous === undefined) {
        checkpoints = v.checkpoints as unknown[]
        continue
      }
      if (v.seal !== undefined && previous === undefined) {
        seals.push(v.seal)
        continue
      }
      if (v.end && typeof v.end === 'object') {
        ended = true
        const effects = (v.end as { effects?: Record<string, { state: State; seq: number }> }).effects ?? {}
        projection = new Map(Object.entries(effects))
        continue
      }
      if (!isRecordShaped(v)) throw unreadableLine(path, n, line, previous, 'is not a journal record')
      previous = { journal: v.journal, seq: v.seq }
      yield v
    }
    if (!ended) problems.push(`export file ${path} has no end line; it was cut short`)
  }
  return { records: records(), projection: () => projection, checkpoints: () => checkpoints, seals: () => seals, problems }
}

function isRecordShaped(v: Record<string, unknown>): v is Record<string, unknown> & JournalRecord {
  const strings = ['journal', 'effectId', 'state', 'at', 'prevHash', 'hash'] as const
  return (
    strings.every((f) => typeof v[f] === 'string') &&
    Number.isSafeInteger(v.seq) &&
    v.data !== null &&
    typeof v.data === 'object' &&
    !Array.isArray(v.data)
  )
}

/**
 * A record line that cannot be read, named by the journal and record it
 * starts with (export lines begin {"journal":…,"seq":…, and a damaged byte
 * further on leaves that readable), else by the record before it.
 */
function unreadableLine(path: string, n: number, line: string, previous: { journal: string; seq: number } | undefined, what: string): IntegrityError {
  const head = /^\{"journal":("(?:[^"\\]|\\.)*"),"seq":(-?\d+)[,}]/.exec(line)
  let journal: string | undefined
  let seq: number | undefined
  if (head) {
    try {
      journal = JSON.parse(head[1]!) as string
      seq = Number(head[2])
    } catch {
      journal = undefined
    }
  }
  const record = journal !== undefined && seq !== undefined
    ? `journal ${JSON.stringify(journal)} record ${seq}`
    : previous
      ? `the record after journal ${JSON.stringify(previous.journal)} record ${previous.seq}`
      : 'the first record'
  return new IntegrityError(`export file ${path} line ${n} (${record}) ${what}; the file was altered or damaged`, {
    hint: 'Export the journal again from the store, or restore the file from a copy.',
    context: { path, line: n, ...(journal !== undefined && seq !== undefined ? { journal, seq } : previous ? { after: previous } : {}) },
  })
}
