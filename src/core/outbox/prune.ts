/**
 * `outbox prune`: take settled history out of the store, without losing
 * what makes it verifiable.
 *
 * 1. Verify every journal, as `outbox anchor` does (a checkpoint vouches for
 *    what it removes, so it is only made of journals that verify), and plan
 *    where each may be cut (cut-plan.ts): effects settled before the cutoff,
 *    whole, from the journal's start.
 * 2. Write the archive: an export-format file of the records to be removed,
 *    with the checkpoints they follow, made durable (fsync) before anything
 *    is deleted. `outbox verify --file <archive>` checks it on its own.
 * 3. Sign the checkpoint: each cut journal's last removed record, and the
 *    archive's digest; write it beside the archive.
 * 4. Hand it to the store, which stores it and deletes each journal's
 *    records and effects rows up to the cut, checking each against the
 *    checkpoint first (Store.prune).
 *
 * Relays may go on writing meanwhile: what is removed is settled, and
 * nothing settled ever changes; records appended after the reading lie past
 * every cut.
 */
import { basename } from 'node:path'
import type { JsonObject } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { IntegrityError } from '../errors.js'
import type { PruneResult, Store } from '../stores/store.js'
import { checkpointDigest, signCheckpoint, writeCheckpoint } from './checkpoint-file.js'
import { CutPlanner, planning, type PlannedCut } from './cut-plan.js'
import { writeExport, type Projection } from './export-file.js'
import { verifyRecords, type VerifyOptions, type VerifyReport } from './verify.js'

export interface PruneOptions extends Omit<VerifyOptions, 'projection' | 'heads' | 'checkpoints'> {
  /** Effects settled at least this long ago go (ms). */
  olderThanMs: number
  now: Date
  /** The archive file to write (must not exist); the checkpoint goes beside it (`<archive>.checkpoint.json`). */
  archive: string
  /** Signs the checkpoint: an operator key or the relay key, which verify trusts. */
  key: KeyPair
  /** Plan only: verify, and say what would go; write and delete nothing. */
  dryRun?: boolean
}

export interface PruneOutcome {
  dryRun: boolean
  /** Effects settled before this time were eligible. */
  cutoff: string
  journals: number
  records: number
  effects: number
  archive?: { path: string; sha256: string }
  checkpoint?: { path: string; digest: string; signer: string; role: string; at: string }
}

export async function pruneJournals(store: Store, opts: PruneOptions): Promise<{ outcome: PruneOutcome; report: VerifyReport }> {
  const cutoffMs = opts.now.getTime() - opts.olderThanMs
  const cutoff = new Date(cutoffMs).toISOString()
  const planner = new CutPlanner(cutoffMs)
  const stored = await store.checkpoints()
  const checkpoints = stored.map((c) => c.document)
  const seals = await store.seals()
  const report = await verifyRecords(planning(store.records(), planner), { ...opts, checkpoints, seals, wholeStore: true })
  if (!report.ok) {
    throw new IntegrityError(`not pruned: the journals do not verify (${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}); the first: ${report.firstBad!.message}`, {
      hint: 'A checkpoint vouches for what it removes: find out what happened (`interlock outbox verify`) first. Nothing was written or deleted.',
      context: { report },
    })
  }
  const cuts = planner.cuts()
  const sum = (f: (c: PlannedCut) => number) => cuts.reduce((n, c) => n + f(c), 0)
  const outcome: PruneOutcome = { dryRun: opts.dryRun ?? false, cutoff, journals: cuts.length, records: sum((c) => c.records), effects: sum((c) => c.effectIds.length) }
  if (opts.dryRun || cuts.length === 0) return { outcome, report }

  const archive = await writeArchive(store, opts, cuts, checkpoints, seals, outcome)
  const file = signCheckpoint(
    cuts.map((c) => ({ journal: c.journal, seq: c.seq, hash: c.hash })),
    store.kind,
    { file: basename(opts.archive), sha256: archive.sha256, records: outcome.records, effects: outcome.effects },
    opts.key,
    opts.now,
  )
  const checkpointPath = `${opts.archive}.checkpoint.json`
  writeCheckpoint(checkpointPath, file)
  const digest = checkpointDigest(file)
  const done: PruneResult = await store.prune({
    checkpoint: { digest, madeAt: opts.now.toISOString(), document: file as unknown as JsonObject },
    cuts: cuts.map(({ journal, seq, hash, effectIds }) => ({ journal, seq, hash, effectIds })),
  })
  const s = file.checkpoint.statement
  return {
    outcome: {
      ...outcome,
      journals: done.journals,
      records: done.records,
      effects: done.effects,
      archive: { path: opts.archive, sha256: archive.sha256 },
      checkpoint: { path: checkpointPath, digest, signer: s.signer, role: s.role, at: s.at },
    },
    report,
  }
}

/** The records each cut removes, read again from the store; each cut's last one must still be the record verified. */
async function writeArchive(store: Store, opts: PruneOptions, cuts: readonly PlannedCut[], checkpoints: readonly unknown[], seals: readonly unknown[], planned: PruneOutcome): Promise<{ sha256: string }> {
  const byJournal = new Map(cuts.map((c) => [c.journal, c]))
  const ends: Projection = new Map(cuts.flatMap((c) => [...c.ends]))
  const seen = new Map<string, string>()
  const { records, sha256 } = await writeExport(opts.archive, 'archive', {
    store: store.kind,
    now: opts.now,
    checkpoints,
    // Every seal: the archive is verified on its own, and a seal may cover records of any journal.
    seals,
    records: store.records(),
    keep: (r) => {
      const cut = byJournal.get(r.journal)
      if (!cut || r.seq > cut.seq) return false
      if (r.seq === cut.seq) seen.set(r.journal, r.hash)
      return true
    },
    projection: ends,
    durable: true,
  })
  const moved = cuts.find((c) => seen.get(c.journal) !== c.hash)
  if (records !== planned.records || moved) {
    throw new IntegrityError(
      `not pruned: the journals changed between the verifying read and the archive's (${moved ? `journal ${JSON.stringify(moved.journal)} record ${moved.seq}` : `${records} records read, ${planned.records} planned`}); the archive ${opts.archive} is incomplete and nothing was deleted`,
      { hint: 'Another prune may have run at the same time. Remove the archive file and run prune again.', context: { archive: opts.archive } },
    )
  }
  return { sha256 }
}
