/**
 * `outbox checkpoint`: settled history verified once, then pinned under a
 * signature, so that neither recovery nor the next checkpoint reads it again
 * and a rewrite of it is still found.
 *
 * 1. Each journal is read from its last pin on: the furthest head of a
 *    checkpoint signed by a key trusted here (one this command made, or a
 *    prune's), or from its start the first time (Store.records(after): the
 *    records before the pin are not read at all).
 * 2. What is read is verified as `outbox verify` verifies it (chain from the
 *    pinned hash, lifecycle, effect ids, the policy in force, operators' and
 *    relays' signatures); a problem refuses the checkpoint and nothing is
 *    written.
 * 3. The settled prefix of what was read is pinned: each journal's longest
 *    run of records, from the start of the reading, of effects settled
 *    (COMMITTED, REJECTED, FAILED) whole within it (cut-plan.ts, as prune
 *    plans its cuts, with no age limit). So no effect ever straddles a pin,
 *    and the next reading from it needs nothing before it. Its last record
 *    (journal, seq, hash) is signed with an operator key or the relay key
 *    into a checkpoint that removes nothing (checkpoint-file.ts, no archive),
 *    stored in the store (Store.prune with no cuts), and optionally written
 *    to a file to keep elsewhere.
 *
 * What it costs is the records since each journal's pin: settled history is
 * read once. A journal whose oldest open effect is old is read from that
 * effect on each time (its records after the pin may still change).
 *
 * What it buys: `outbox verify` checks each pinned record is still there
 * with its hash; a record rewritten before it (the chain recomputed over it,
 * every hash consistent) or a journal cut back below it is a problem, named
 * by the checkpoint. Recovery (stores/in-flight-check.ts) no longer reads
 * settled history at all: this is where it is verified instead.
 *
 * A checkpoint deleted from the store pins nothing any more, and the store
 * cannot tell: keep the file (`--out`) or an anchor (`outbox anchor`) where
 * the store's writers cannot reach.
 */
import type { JsonObject } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { IntegrityError } from '../errors.js'
import type { Store } from '../stores/store.js'
import { checkpointDigest, judgeCheckpoint, signCheckpoint, writeCheckpoint } from './checkpoint-file.js'
import { CutPlanner, planning } from './cut-plan.js'
import { verifyRecords, type VerifyOptions, type VerifyReport } from './verify.js'

export interface CheckpointOptions extends Omit<VerifyOptions, 'projection' | 'heads' | 'checkpoints' | 'startAfter' | 'wholeStore'> {
  /** Signs the checkpoint: an operator key or the relay key, which verify trusts. */
  key: KeyPair
  now: Date
  /** Also write the checkpoint to this new file. */
  out?: string
  /** Verify and say what would be pinned; write nothing. */
  dryRun?: boolean
}

export interface CheckpointOutcome {
  dryRun: boolean
  /** What was read and verified: each journal from its last pin on. */
  read: { journals: number; records: number }
  /** Newly pinned: journals, records and effects settled within them. */
  journals: number
  records: number
  effects: number
  checkpoint?: { digest: string; signer: string; role: string; at: string; path?: string }
}

export async function checkpointJournals(store: Store, opts: CheckpointOptions): Promise<{ outcome: CheckpointOutcome; report: VerifyReport }> {
  const docs = (await store.checkpoints()).map((c) => c.document)
  const trust = { operators: new Map(opts.operators.map((o) => [o.name, o.publicKey])), relays: opts.relays ?? [] }
  // Only a pin whose signature verified here is read from: a relay's with no relay key to check it is not.
  const pins = new Map<string, { seq: number; hash: string }>()
  for (const doc of docs) {
    const c = judgeCheckpoint(doc, trust)
    if (c.status !== 'valid') continue
    for (const [journal, head] of c.heads) if (head.seq > (pins.get(journal)?.seq ?? -Infinity)) pins.set(journal, head)
  }
  const planner = new CutPlanner(Number.POSITIVE_INFINITY)
  const after = new Map([...pins].map(([journal, pin]) => [journal, pin.seq]))
  const report = await verifyRecords(planning(store.records(after), planner), { ...opts, checkpoints: docs, seals: await store.seals(), startAfter: pins })
  if (!report.ok) {
    throw new IntegrityError(`not checkpointed: the journals do not verify (${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}); the first: ${report.firstBad!.message}`, {
      hint: 'A checkpoint vouches for what it pins: find out what happened (`interlock outbox verify`) first. Nothing was written.',
      context: { report },
    })
  }
  const cuts = planner.cuts()
  const sum = (f: (c: (typeof cuts)[number]) => number) => cuts.reduce((n, c) => n + f(c), 0)
  const outcome: CheckpointOutcome = {
    dryRun: opts.dryRun ?? false,
    read: { journals: report.journals, records: report.records },
    journals: cuts.length,
    records: sum((c) => c.records),
    effects: sum((c) => c.effectIds.length),
  }
  if (opts.dryRun || cuts.length === 0) return { outcome, report }
  const file = signCheckpoint(
    cuts.map((c) => ({ journal: c.journal, seq: c.seq, hash: c.hash })),
    store.kind,
    { records: outcome.records, effects: outcome.effects },
    opts.key,
    opts.now,
  )
  if (opts.out) writeCheckpoint(opts.out, file)
  const digest = checkpointDigest(file)
  // A prune with nothing to cut stores the checkpoint alone.
  await store.prune({ checkpoint: { digest, madeAt: opts.now.toISOString(), document: file as unknown as JsonObject }, cuts: [] })
  const s = file.checkpoint.statement
  return { outcome: { ...outcome, checkpoint: { digest, signer: s.signer, role: s.role, at: s.at, ...(opts.out ? { path: opts.out } : {}) } }, report }
}
