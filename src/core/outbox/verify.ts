/**
 * `outbox verify`'s engine, offline: given every journal record (from a store
 * or an export) and who is trusted, recompute each journal's hash chain,
 * follow each effect through the lifecycle, recompute each effect's id from
 * what its proposal journaled, judge each authorization straight from
 * PROPOSED by the policy in force, and check every signed statement a record
 * carries: operator releases (and that an authorization had its quorum),
 * denials and resolutions, relay receipts, and the signature of whoever
 * wrote the record (verify-writers.ts). Names the first bad record and lists
 * every problem; stops reading a journal's chain at its first break (what
 * follows cannot be trusted, and would only repeat it). A record that cannot
 * be read at all (its data no longer parses) ends the reading there, as a
 * problem naming it.
 *
 * The `effects` projection (the store's effects table, or an export's end
 * line) is compared with where each effect's records end, so a record
 * removed from the end of a journal shows too; a journal cut back with its
 * effects rows rewritten to match shows only against an anchor (anchor-file.ts).
 *
 * A journal `outbox prune` cut starts after its checkpoint's head
 * (checkpoint-file.ts): with a trusted checkpoint, its chain is verified from
 * there; a journal that starts anywhere but record 1 or a trusted
 * checkpoint's head, and a checkpoint that does not verify, are problems.
 * Every record a trusted checkpoint pinned (`outbox prune`'s, and
 * `outbox checkpoint`'s, which prunes nothing) must still be there with the
 * hash it pinned: a record rewritten before it shows there even with the
 * chain recomputed over it, and so does (reading a whole store) a journal
 * cut back below it.
 */
import type { ProjectedEffect } from './export-file.js'
import { rowFieldDisagreements } from './journaled-effect.js'
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import type { OperatorConfig } from '../config/types.js'
import { effectDigest } from '../crypto/digest.js'
import { nativeVerifier } from '../crypto/native-ed25519.js'
import { statementBytes, verifySigned } from '../crypto/sign.js'
import type { ReleaseStatement, Signed, StatementKind } from '../crypto/statements.js'
import { effectId, type Effect, type Tier } from '../effect.js'
import { IntegrityError, isInterlockError } from '../errors.js'
import { sha256Hex } from '../hash.js'
import { canTransition, isState, type State } from '../lifecycle.js'
import type { Policy } from '../policy.js'
import { ChainVerifier } from '../stores/record-hash.js'
import type { JournalRecord } from '../stores/store.js'
import type { JournalHead, TrustedAnchor } from './anchor-file.js'
import { judgeCheckpoint, type JudgedCheckpoint } from './checkpoint-file.js'
import { statementsIn } from './journal-statements.js'
import type { RuleSource } from './release-check.js'
import { SealIndex, type SealCounts } from './verify-seals.js'
import { WriterCheck, type WriterCounts, type WriterTrack } from './verify-writers.js'

export interface VerifyProblem {
  journal: string
  seq: number
  effectId: string
  message: string
  /** 'unsigned': records a relay writes that carry no signature (what `outbox anchor --cover-unsigned` may vouch for). */
  kind?: 'unsigned'
}

export interface VerifyReport {
  ok: boolean
  journals: number
  records: number
  effects: number
  /** Operator statements whose signature verified / failed. */
  signatures: { valid: number; invalid: number }
  /** Relay receipts verified, and those left unchecked because no relay key was given. */
  receipts: { valid: number; invalid: number; unchecked: number }
  /** Records past PROPOSED that a relay or gate writes: how each was found covered (verify-writers.ts). */
  writers: WriterCounts
  /** Seals (one per commit of a signing writer): verified with a trusted key, not, or not checked for want of relay keys. */
  seals: SealCounts
  /** The anchor checked against (--anchor), when one was given. */
  anchor?: { path: string; signer: string; role: string; at: string; journals: number }
  /** Checkpoints of pruned journals: signed by a trusted key, by a relay with no relay key given, or neither (a problem). */
  checkpoints: { valid: number; invalid: number; unchecked: number }
  /** A record could not be read: nothing after it was. */
  stopped?: VerifyProblem
  problems: VerifyProblem[]
  firstBad?: VerifyProblem
}

export interface TrustedKey {
  name: string
  publicKey: string
}

export interface VerifyOptions {
  operators: readonly OperatorConfig[]
  /** Trusted relay public keys (relay-keys.ts); without any, receipts are counted as unchecked, not failed. */
  relays?: readonly TrustedKey[]
  /**
   * The policy in force: each authorization from HELD must carry its rule's
   * quorum (skipped for a rule no longer declared), and an effect a rule holds
   * must never be authorized straight from PROPOSED.
   */
  policy?: RuleSource & Pick<Policy, 'evaluate'>
  /** Where each effect's records should end (state and seq), when known; a function is asked after the last record. */
  projection?: ReadonlyMap<string, ProjectedEffect> | (() => ReadonlyMap<string, ProjectedEffect> | undefined)
  /** A signed anchor (anchor-file.ts readAnchor): every journal must still reach its head there. */
  anchor?: TrustedAnchor
  /** Filled with every journal's last verified record: what `outbox anchor` signs. */
  heads?: Map<string, JournalHead>
  /**
   * The checkpoints of pruned journals, as stored or exported (judged here
   * against the trusted keys). A function is asked when the first record is
   * read (an export carries them on the line before its records).
   */
  checkpoints?: readonly unknown[] | (() => readonly unknown[] | undefined)
  /**
   * The stored seals (crypto/seal.ts), as stored or exported, judged here
   * against the trusted keys. A function is asked when the first record is
   * read (an export carries them on lines before its records).
   */
  seals?: readonly unknown[] | (() => readonly unknown[] | undefined)
  /**
   * Where the caller started reading some journals (`outbox checkpoint` reads
   * each from its last trusted pin on): their chain resumes from there.
   */
  startAfter?: ReadonlyMap<string, { seq: number; hash: string }>
  /**
   * The records are the store's journals whole, as they are now (not an
   * archive, an export, or a reading from pins on): every record a trusted
   * checkpoint pinned must still be reached.
   */
  wholeStore?: boolean
  /**
   * The records are one effect's history as the store's history() returned
   * it, each already linked to the record before it in its journal (whatever
   * effect that one is: stores/history-check.ts): each record's own hash is
   * checked here, its link taken from there. The console's timeline of one
   * effect reads this way, without its whole journal.
   */
  oneEffect?: boolean
}

interface EffectTrack extends WriterTrack {
  state: State
  seq: number
  effect?: Effect
  tier?: Tier
  digest?: string
  rule?: string
  /** When each release (by nonce) was journaled in a HELD record: its expiry is judged then. */
  releasedAt?: Map<string, string>
}

/** The operator act that covers each transition an operator makes (journal-statements.ts). */
const OPERATOR_ACTS: Readonly<Record<string, StatementKind>> = {
  'HELD>HELD': 'release',
  'HELD>AUTHORIZED': 'release',
  'HELD>REJECTED': 'denial',
  'AMBIGUOUS>COMMITTED': 'resolution',
  'AMBIGUOUS>FAILED': 'resolution',
  'AMBIGUOUS>DISPATCHED': 'resolution',
}

export async function verifyRecords(records: AsyncIterable<JournalRecord> | Iterable<JournalRecord>, opts: VerifyOptions): Promise<VerifyReport> {
  const operatorKeys = new Map(opts.operators.map((o) => [o.name, o.publicKey]))
  const relayKeys = opts.relays ?? []
  const chain = new ChainVerifier()
  const broken = new Set<string>()
  const journals = new Set<string>()
  const tails = new Map<string, JournalHead>()
  const effects = new Map<string, EffectTrack>()
  const report: VerifyReport = {
    ok: true,
    journals: 0,
    records: 0,
    effects: 0,
    signatures: { valid: 0, invalid: 0 },
    receipts: { valid: 0, invalid: 0, unchecked: 0 },
    writers: { valid: 0, sealed: 0, invalid: 0, unchecked: 0, unsigned: 0, byAnchor: 0 },
    seals: { valid: 0, invalid: 0, unchecked: 0 },
    checkpoints: { valid: 0, invalid: 0, unchecked: 0 },
    problems: [],
  }
  const problem = (r: Pick<JournalRecord, 'journal' | 'seq' | 'effectId'>, message: string, kind?: VerifyProblem['kind']) =>
    report.problems.push({ journal: r.journal, seq: r.seq, effectId: r.effectId, message, ...(kind ? { kind } : {}) })
  // What trusted checkpoints pinned in each journal (asked for once, when reading starts).
  let pins: Pins | undefined
  const pinsNow = (): Pins => (pins ??= checkpointPins(opts, { operators: operatorKeys, relays: relayKeys }, report, problem))
  // Where each journal that does not start at record 1 starts: after a pruning checkpoint's head, or where the caller started reading.
  const starts = new Map<string, number>()
  const startOf = (journal: string): number | undefined => starts.get(journal) ?? opts.startAfter?.get(journal)?.seq ?? pinsNow().prunedTo.get(journal)
  let seals: SealIndex | undefined
  const sealsNow = (): SealIndex => {
    if (seals) return seals
    const given = typeof opts.seals === 'function' ? opts.seals() : opts.seals
    seals = new SealIndex(given ?? [], { operators: operatorKeys, relays: relayKeys }, (message) => problem({ journal: '?', seq: 0, effectId: '?' }, message))
    report.seals = seals.counts
    return seals
  }
  const writers = new WriterCheck({ operators: operatorKeys, relays: relayKeys }, opts.anchor, problem, startOf, sealsNow)
  const keys: Keys = { operatorKeys, relayKeys, policy: opts.policy, verify: nativeVerifier() }

  const reading = (async function* () {
    yield* records
  })()
  for (;;) {
    let next: IteratorResult<JournalRecord>
    try {
      next = await reading.next()
    } catch (e) {
      // A record the store or file cannot even read back: an integrity failure naming it, and the end of the reading.
      if (!(e instanceof IntegrityError)) throw e
      const c = e.context as { journal?: unknown; seq?: unknown }
      const at = { journal: typeof c.journal === 'string' ? c.journal : '?', seq: typeof c.seq === 'number' ? c.seq : 0, effectId: '?' }
      problem(at, `${e.message}; verification stopped there, and nothing after it was read`)
      report.stopped = { ...report.problems.at(-1)! }
      break
    }
    if (next.done) break
    const r = next.value
    report.records++
    journals.add(r.journal)
    if (broken.has(r.journal)) continue
    const pinned = pinsNow().at.get(r.journal)
    try {
      if (!isState(r.state)) throw new Error(`has an unknown state ${JSON.stringify(r.state)}`)
      // The first record left after a prune links to the checkpoint's head; a reading started later, to where it started.
      if (!tails.has(r.journal) && r.seq !== 1) {
        const given = opts.startAfter?.get(r.journal)
        const from = given?.seq === r.seq - 1 ? given : pinned?.get(r.seq - 1)?.find((p) => p.pruned)
        if (from) {
          chain.resume(r.journal, r.seq - 1, from.hash)
          starts.set(r.journal, r.seq - 1)
        }
      }
      if (opts.oneEffect) chain.resume(r.journal, r.seq - 1, r.prevHash)
      chain.check(r)
    } catch (e) {
      broken.add(r.journal)
      problem(r, isInterlockError(e) ? e.message : `journal ${JSON.stringify(r.journal)} record ${r.seq} ${(e as Error).message}`)
      continue
    }
    for (const pin of pinned?.get(r.seq) ?? []) {
      if (r.hash !== pin.hash) problem(r, `${where(r)} is not the record checkpoint ${pinName(pin)} pinned ${pin.pruned ? 'as the last one pruned' : 'as the end of the settled history it verified'}: the journal was rewritten at or before it`)
    }
    const tail = tails.get(r.journal)
    if (tail) {
      tail.seq = r.seq
      tail.hash = r.hash
    } else tails.set(r.journal, { journal: r.journal, seq: r.seq, hash: r.hash })
    const prev = effects.get(r.effectId)
    const from = prev?.state ?? null
    if (!canTransition(from, r.state)) {
      problem(r, `${where(r)} moves effect ${r.effectId} from ${from ?? '(none)'} to ${r.state}, which the lifecycle forbids`)
    }
    const track: EffectTrack = prev ?? { state: r.state, seq: r.seq, journal: r.journal, runSeqs: [], runData: [] }
    if (r.state === 'PROPOSED') proposed(r, track, problem)
    // The policy's decision, judged again by the policy in force: it needs no writer's signature to be believed.
    const decided = from === 'PROPOSED' && (r.state === 'AUTHORIZED' || r.state === 'HELD') && policyDecision(r, track, keys.policy, problem)
    if (r.state === 'HELD' && typeof r.data.rule === 'string') track.rule = r.data.rule
    const acts = checkStatements(r, from, track, keys, report, problem)
    writers.record(r, from, track, decided || acts.has(OPERATOR_ACTS[`${from}>${r.state}`]!))
    track.state = r.state
    track.seq = r.seq
    track.journal = r.journal
    effects.set(r.effectId, track)
  }

  // Read to the end: what must hold of the whole journal. (Stopped early, most of it would only repeat the stop.)
  if (!report.stopped) {
    const projection = typeof opts.projection === 'function' ? opts.projection() : opts.projection
    if (projection) {
      for (const [id, p] of projection) {
        const t = effects.get(id)
        if (t && broken.has(t.journal)) continue
        if (!t) problem({ journal: '?', seq: p.seq, effectId: id }, `effect ${id} is ${p.state} at record ${p.seq}, but the journal has no record of it`)
        else if (t.state !== p.state || t.seq !== p.seq) {
          problem({ journal: t.journal, seq: p.seq, effectId: id }, `journal ${JSON.stringify(t.journal)} record ${p.seq} should be effect ${id}'s last (${p.state}), but its records end at ${t.seq} (${t.state}); records were removed from the end`)
        }
        // The row a relay reads against the PROPOSED record its releases signed: an edit behind the journal is a finding.
        if (t && p.row && t.effect && t.tier !== undefined) {
          const fields = rowFieldDisagreements(p.row, { effect: t.effect, tier: t.tier })
          if (fields.length > 0) {
            problem({ journal: t.journal, seq: t.seq, effectId: id }, `effect ${id}: its effects row disagrees with its journal in ${fields.join(', ')}: the row was edited behind the journal (relays refuse to send it; the journal's PROPOSED record is what was signed)`)
          }
        }
      }
      for (const [id, t] of effects) {
        if (!projection.has(id) && !broken.has(t.journal)) problem({ journal: t.journal, seq: t.seq, effectId: id }, `effect ${id} has records but is not listed among the effects; a record was inserted`)
      }
    }
    writers.finish(effects, new Map([...tails].map(([j, h]) => [j, h.seq])), broken)
    if (opts.wholeStore) {
      for (const [journal, pinned] of pinsNow().at) {
        if (broken.has(journal)) continue
        const end = tails.get(journal)?.seq ?? startOf(journal) ?? 0
        const beyond = [...pinned.values()].flat().filter((p) => p.seq > end).sort((a, b) => b.seq - a.seq)[0]
        if (beyond) {
          problem(
            { journal, seq: beyond.seq, effectId: '?' },
            `journal ${JSON.stringify(journal)} ${tails.has(journal) ? `ends at record ${end}` : 'has no records'}, but checkpoint ${pinName(beyond)} pinned its record ${beyond.seq}: records were removed from its end`,
          )
        }
      }
    }
  }
  pinsNow()
  if (opts.heads) for (const [j, h] of tails) if (!broken.has(j)) opts.heads.set(j, h)
  if (opts.anchor) {
    const a = opts.anchor
    report.anchor = { path: a.path, signer: a.signer, role: a.role, at: a.at, journals: a.heads.size }
  }
  report.writers = writers.counts
  report.journals = journals.size
  report.effects = effects.size
  report.ok = report.problems.length === 0
  // A copy, not the same object: --json output would print a second reference as "[circular]".
  report.firstBad = report.problems[0] && { ...report.problems[0] }
  return report
}

interface Pin {
  seq: number
  hash: string
  digest: string
  signer: string
  role: string
  at: string
  /** By `outbox prune`: the journal may start right after it. */
  pruned: boolean
}

interface Pins {
  /** Per journal, per seq, the trusted checkpoints' heads there. */
  at: Map<string, Map<number, Pin[]>>
  /** Per journal, the furthest head of a trusted checkpoint that pruned it. */
  prunedTo: Map<string, number>
}

/**
 * What each trusted checkpoint pinned: the checkpoints that verified (or are
 * a relay's, with no relay key to check them: unchecked, as relay records are
 * then). A checkpoint that does not verify is a problem and vouches for
 * nothing.
 */
function checkpointPins(
  opts: VerifyOptions,
  trust: { operators: ReadonlyMap<string, string>; relays: readonly TrustedKey[] },
  report: VerifyReport,
  problem: (r: Pick<JournalRecord, 'journal' | 'seq' | 'effectId'>, message: string) => void,
): Pins {
  const docs = (typeof opts.checkpoints === 'function' ? opts.checkpoints() : opts.checkpoints) ?? []
  const pins: Pins = { at: new Map(), prunedTo: new Map() }
  for (const doc of docs) {
    const c: JudgedCheckpoint = judgeCheckpoint(doc, trust)
    report.checkpoints[c.status]++
    if (c.status === 'invalid') {
      const [journal, head] = [...c.heads][0] ?? ['?', { seq: 0 }]
      problem({ journal, seq: head.seq, effectId: '?' }, `checkpoint ${c.digest.slice(0, 12)}… (by ${c.role} ${c.signer} at ${c.at}) ${c.why}; the records it ${c.pruned ? 'says were pruned are' : 'pins are'} vouched for by nothing`)
      continue
    }
    for (const [journal, head] of c.heads) {
      const pin: Pin = { ...head, digest: c.digest, signer: c.signer, role: String(c.role), at: c.at, pruned: c.pruned }
      let bySeq = pins.at.get(journal)
      if (!bySeq) pins.at.set(journal, (bySeq = new Map()))
      bySeq.set(head.seq, [...(bySeq.get(head.seq) ?? []), pin])
      if (c.pruned && head.seq > (pins.prunedTo.get(journal) ?? -Infinity)) pins.prunedTo.set(journal, head.seq)
    }
  }
  return pins
}

function pinName(p: Pin): string {
  return `${p.digest.slice(0, 12)}… (signed by ${p.role} ${p.signer} at ${p.at})`
}

/** A proposal: it must carry its effect, and the effect's id must be the hash of what it journaled. */
function proposed(r: JournalRecord, track: EffectTrack, problem: (r: JournalRecord, m: string) => void): void {
  const e = (r.data.effect ?? undefined) as Effect | undefined
  if (!e || typeof e !== 'object' || e.id !== r.effectId) {
    problem(r, `${where(r)} proposes effect ${r.effectId} but carries ${e && typeof e === 'object' ? `effect ${e.id}` : 'no effect'}`)
    return
  }
  let recomputed: string
  try {
    recomputed = effectId(e)
  } catch (err) {
    problem(r, `${where(r)} proposes effect ${r.effectId} with an effect that is not well formed: ${(err as Error).message}`)
    return
  }
  // The id is what releases, receipts and idempotency keys are bound to; args rewritten under it (chain recomputed) show here.
  if (recomputed !== r.effectId) {
    problem(r, `${where(r)} proposes effect ${r.effectId}, but its thread, target, action, args and key hash to ${recomputed}: the effect was rewritten after it was proposed`)
    return
  }
  if (e.thread !== r.journal) problem(r, `${where(r)} proposes an effect of thread ${JSON.stringify(e.thread)} in journal ${JSON.stringify(r.journal)}: every effect is journaled in its thread's journal`)
  track.effect = e
  track.digest = effectDigest(e)
  if (r.data.tier === 1 || r.data.tier === 2 || r.data.tier === 3) track.tier = r.data.tier
}

/**
 * PROPOSED → AUTHORIZED or HELD is the policy's decision, recomputed here with
 * the policy in force: an effect a rule holds must not be authorized without
 * operators, and one held must be held by the rule that holds it (another
 * rule's quorum could be smaller). True when the decision could be judged
 * (so it is covered whoever wrote it: verify-writers.ts).
 */
function policyDecision(r: JournalRecord, track: EffectTrack, policy: Keys['policy'], problem: (r: JournalRecord, m: string) => void): boolean {
  if (!policy || !track.effect || track.tier === undefined) return false
  const hold = policy.evaluate(track.effect, track.tier)
  if (r.state === 'AUTHORIZED' && hold) {
    problem(r, `${where(r)} authorizes effect ${r.effectId} without operators, but rule "${hold.rule}" of the policy in force holds it${hold.reason ? ` (${hold.reason})` : ''}: it should have been HELD for a release`)
  }
  if (r.state === 'HELD' && hold && r.data.rule !== hold.rule) {
    problem(r, `${where(r)} holds effect ${r.effectId} under rule ${JSON.stringify(r.data.rule)}, but the policy in force holds it under rule "${hold.rule}"`)
  }
  return true
}

interface Keys {
  operatorKeys: ReadonlyMap<string, string>
  relayKeys: readonly TrustedKey[]
  policy?: VerifyOptions['policy']
  /** Relay signatures are checked natively: one per committed effect, a million in a large journal. */
  verify: ReturnType<typeof nativeVerifier>
}

/** Checks the signed statements a record carries; returns the kinds of operator statements that verified. */
function checkStatements(
  r: JournalRecord,
  from: State | null,
  track: EffectTrack,
  keys: Keys,
  report: VerifyReport,
  problem: (r: JournalRecord, m: string) => void,
): Set<StatementKind> {
  const signed = statementsIn(r.data)
  const validKinds = new Set<StatementKind>()
  const validReleases: Signed<ReleaseStatement>[] = []
  for (const s of signed) {
    const st = s.statement
    if (st.kind === 'receipt') {
      if (keys.relayKeys.length === 0) {
        report.receipts.unchecked++
        continue
      }
      // A relay keeps its id across key rotations: any given key under its name counts, and
      // so does a given key equal to the one the receipt names (never that key on its own say-so).
      const named = (s as Signed & { publicKey?: unknown }).publicKey
      const candidates = keys.relayKeys.filter((k) => k.name === st.relay || k.publicKey === named)
      const digestOk = st.receiptDigest === sha256Hex(canonicalJson((r.data.receipt ?? {}) as JsonObject))
      const message = statementBytes(st)
      if (candidates.some((k) => keys.verify(k.publicKey, message, s.signature)) && st.effectId === r.effectId && digestOk) report.receipts.valid++
      else {
        report.receipts.invalid++
        problem(r, candidates.length === 0
          ? `${where(r)}: the receipt is signed by relay ${st.relay}${typeof named === 'string' ? ` with key ${named}` : ''}, which is not a trusted relay key`
          : `${where(r)}: the receipt signed by relay ${st.relay} does not verify with its trusted key, or does not match this record`)
      }
      continue
    }
    const key = keys.operatorKeys.get(st.operator)
    let why: string | undefined
    if (!key) why = `is signed by "${st.operator}", who is not a trusted operator`
    else if (!verifySigned(s, key)) why = `carries a ${st.kind} signature by ${st.operator} that does not verify (forged or altered)`
    else if (st.effectId !== r.effectId) why = `carries a ${st.kind} signed for another effect (${st.effectId})`
    else if (track.digest !== undefined && st.digest !== track.digest) why = `carries a ${st.kind} by ${st.operator} signed for other args or premises than the effect's`
    if (why) {
      report.signatures.invalid++
      problem(r, `${where(r)} ${why}`)
    } else {
      report.signatures.valid++
      validKinds.add(st.kind)
      if (st.kind === 'release') validReleases.push(s as Signed<ReleaseStatement>)
    }
  }
  if (r.state === 'HELD') {
    for (const s of validReleases) (track.releasedAt ??= new Map()).set(s.statement.nonce, r.at)
  }
  // Leaving HELD for AUTHORIZED is what signatures are for: it must carry its quorum.
  // Expiry is judged when the quorum formed, the time the last of its releases was
  // journaled (recovery may write AUTHORIZED much later: outbox/recorded-quorum.ts);
  // a release carried here but never journaled before counts from this record's time.
  if (from === 'HELD' && r.state === 'AUTHORIZED') {
    const rule = track.rule !== undefined ? keys.policy?.rule(track.rule) : undefined
    const recorded = (s: Signed<ReleaseStatement>) => Date.parse(track.releasedAt?.get(s.statement.nonce) ?? r.at)
    const formed = Math.max(...validReleases.map(recorded))
    const signers = new Set(validReleases.filter((s) => Date.parse(s.statement.expiresAt) > formed).map((s) => s.statement.operator))
    const need = rule?.quorum ?? 1
    if (signers.size < need) problem(r, `${where(r)} authorizes a held effect with ${signers.size} valid release${signers.size === 1 ? '' : 's'} unexpired when the last was journaled; rule "${track.rule}" needs ${need}`)
  }
  // A return (the target did not apply it: returned.ts) says why; an authorization from DISPATCHED that does not is no return.
  if (from === 'DISPATCHED' && r.state === 'AUTHORIZED' && typeof r.data.returned !== 'string') {
    problem(r, `${where(r)} returns effect ${r.effectId} from DISPATCHED to AUTHORIZED without saying why (no "returned" reason)`)
  }
  if (from === 'AMBIGUOUS' && !signed.some((s) => s.statement.kind === 'resolution')) {
    problem(r, `${where(r)} resolves an AMBIGUOUS effect without an operator's signed resolution`)
  }
  return validKinds
}

function where(r: Pick<JournalRecord, 'journal' | 'seq' | 'state'>): string {
  return `journal ${JSON.stringify(r.journal)} record ${r.seq} (${r.state})`
}
