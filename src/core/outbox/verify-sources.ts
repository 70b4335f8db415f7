/** `outbox verify` against a store or an exported file: the same checks, one report. */
import type { Store } from '../stores/store.js'
import { projectionOf, readExport } from './export-file.js'
import { verifyRecords, type VerifyOptions, type VerifyReport } from './verify.js'

export async function verifyStore(store: Store, opts: Omit<VerifyOptions, 'projection' | 'checkpoints'>): Promise<VerifyReport> {
  const projection = await projectionOf(store, { rows: true })
  const checkpoints = (await store.checkpoints()).map((c) => c.document)
  const seals = await store.seals()
  return verifyRecords(store.records(), { ...opts, projection, checkpoints, seals, wholeStore: true })
}

export async function verifyExport(path: string, opts: Omit<VerifyOptions, 'projection' | 'checkpoints'>): Promise<VerifyReport> {
  const reader = readExport(path)
  // The end line is read last: the projection is asked for after the records; the checkpoints line comes before them.
  const report = await verifyRecords(reader.records, { ...opts, projection: reader.projection, checkpoints: reader.checkpoints, seals: reader.seals })
  for (const message of reader.problems) report.problems.push({ journal: '?', seq: 0, effectId: '?', message })
  report.ok = report.problems.length === 0
  // A copy, not the same object: --json output would print a second reference as "[circular]".
  report.firstBad = report.problems[0] && { ...report.problems[0] }
  return report
}
