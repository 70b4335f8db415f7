/**
 * `outbox anchor`: verify every journal, then sign where each one ends
 * (anchor-file.ts). Safe beside running relays: each journal is anchored
 * where the reading found its end. An anchor vouches for what it covers, so it is only
 * made of journals that verify: a broken chain, a bad signature, an
 * authorization without its quorum all refuse it. Records written before
 * records were signed (before their journal's first signed record) are
 * covered by it from then on. A record a relay writes that carries no
 * signature after a signed one refuses it, unless the operator says to
 * cover it (`coverUnsigned`: a relay of an earlier version was still
 * writing): from then on the anchor is what vouches for it.
 */
import type { KeyPair } from '../crypto/keys.js'
import { IntegrityError } from '../errors.js'
import type { Store } from '../stores/store.js'
import { signAnchor, writeAnchor, type JournalHead } from './anchor-file.js'
import { verifyRecords, type VerifyOptions, type VerifyReport } from './verify.js'

export interface AnchorResult {
  path: string
  journals: number
  records: number
  /** Records without a signature the anchor now vouches for. */
  coveredUnsigned: number
  signer: string
  role: string
  at: string
}

export async function anchorJournals(
  store: Store,
  path: string,
  key: KeyPair,
  opts: Omit<VerifyOptions, 'projection' | 'heads' | 'checkpoints'> & { coverUnsigned?: boolean; now: Date },
): Promise<{ result: AnchorResult; report: VerifyReport }> {
  const heads = new Map<string, JournalHead>()
  // Without the effects rows: relays may go on writing while it reads, and each journal's
  // chain, read to wherever it had got, is a consistent prefix to anchor. Pruned journals start at their checkpoint.
  const checkpoints = (await store.checkpoints()).map((c) => c.document)
  const report = await verifyRecords(store.records(), { ...opts, heads, checkpoints, seals: await store.seals(), wholeStore: true })
  const blocking = report.problems.filter((p) => !(opts.coverUnsigned && p.kind === 'unsigned'))
  if (blocking.length > 0) {
    const unsignedOnly = blocking.every((p) => p.kind === 'unsigned')
    throw new IntegrityError(`not anchored: the journals do not verify (${blocking.length} problem${blocking.length === 1 ? '' : 's'}); the first: ${blocking[0]!.message}`, {
      hint: unsignedOnly
        ? 'These records carry no relay signature (written by a version that did not sign them, by a writer without the relay key, or by someone else). If you have checked them, pass --cover-unsigned: the anchor then vouches for them.'
        : 'An anchor vouches for what it covers: find out what happened (`interlock outbox verify`), and restore the journal from a backup first.',
      context: { report },
    })
  }
  const file = signAnchor([...heads.values()], store.kind, key, opts.now)
  writeAnchor(path, file)
  const s = file.anchor.statement
  return { result: { path, journals: file.heads.length, records: report.records, coveredUnsigned: report.writers.unsigned, signer: s.signer, role: s.role, at: s.at }, report }
}
