/**
 * `outbox verify`'s engine, offline: given every journal record (from a store
 * or an export) and who is trusted, recompute each journal's hash chain,
 * follow each effect through the lifecycle, and check every signed statement
 * a record carries: operator releases (and that an authorization had its
 * quorum), denials and resolutions, and relay receipts. Names the first bad
 * record and lists every problem; stops reading a journal's chain at its
 * first break (what follows cannot be trusted, and would only repeat it).
 *
 * The `effects` projection (the store's effects table, or an export's end
 * line) is compared with where each effect's records end, so a record
 * removed from the end of a journal shows too.
 */
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import type { OperatorConfig } from '../config/types.js'
import { effectDigest } from '../crypto/digest.js'
import { verifySigned } from '../crypto/sign.js'
import type { ReleaseStatement, Signed } from '../crypto/statements.js'
import type { Effect } from '../effect.js'
import { isInterlockError } from '../errors.js'
import { sha256Hex } from '../hash.js'
import { canTransition, isState, type State } from '../lifecycle.js'
import { ChainVerifier } from '../stores/record-hash.js'
import type { JournalRecord } from '../stores/store.js'
import { statementsIn } from './journal-statements.js'
import type { RuleSource } from './release-check.js'

export interface VerifyProblem {
  journal: string
  seq: number
  effectId: string
  message: string
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
  /** The rules, to check each authorization had its quorum (skipped for a rule no longer declared). */
  policy?: RuleSource
  /** Where each effect's records should end (state and seq), when known; a function is asked after the last record. */
  projection?: ReadonlyMap<string, { state: State; seq: number }> | (() => ReadonlyMap<string, { state: State; seq: number }> | undefined)
}

interface EffectTrack {
  state: State
  seq: number
  journal: string
  effect?: Effect
  digest?: string
  rule?: string
  /** When each release (by nonce) was journaled in a HELD record: its expiry is judged then. */
  releasedAt?: Map<string, string>
}

export async function verifyRecords(records: AsyncIterable<JournalRecord> | Iterable<JournalRecord>, opts: VerifyOptions): Promise<VerifyReport> {
  const operatorKeys = new Map(opts.operators.map((o) => [o.name, o.publicKey]))
  const relayKeys = opts.relays ?? []
  const chain = new ChainVerifier()
  const broken = new Set<string>()
  const journals = new Set<string>()
  const effects = new Map<string, EffectTrack>()
  const report: VerifyReport = { ok: true, journals: 0, records: 0, effects: 0, signatures: { valid: 0, invalid: 0 }, receipts: { valid: 0, invalid: 0, unchecked: 0 }, problems: [] }
  const problem = (r: Pick<JournalRecord, 'journal' | 'seq' | 'effectId'>, message: string) =>
    report.problems.push({ journal: r.journal, seq: r.seq, effectId: r.effectId, message })

  for await (const r of records) {
    report.records++
    journals.add(r.journal)
    if (broken.has(r.journal)) continue
    try {
      if (!isState(r.state)) throw new Error(`has an unknown state ${JSON.stringify(r.state)}`)
      chain.check(r)
    } catch (e) {
      broken.add(r.journal)
      problem(r, isInterlockError(e) ? e.message : `journal ${JSON.stringify(r.journal)} record ${r.seq} ${(e as Error).message}`)
      continue
    }
    const prev = effects.get(r.effectId)
    if (!canTransition(prev?.state ?? null, r.state)) {
      problem(r, `${where(r)} moves effect ${r.effectId} from ${prev?.state ?? '(none)'} to ${r.state}, which the lifecycle forbids`)
    }
    const track: EffectTrack = prev ?? { state: r.state, seq: r.seq, journal: r.journal }
    if (r.state === 'PROPOSED') {
      const e = (r.data.effect ?? undefined) as Effect | undefined
      if (!e || e.id !== r.effectId) problem(r, `${where(r)} proposes effect ${r.effectId} but carries ${e ? `effect ${e.id}` : 'no effect'}`)
      else {
        track.effect = e
        track.digest = effectDigest(e)
      }
    }
    if (r.state === 'HELD' && typeof r.data.rule === 'string') track.rule = r.data.rule
    checkStatements(r, prev?.state ?? null, track, { operatorKeys, relayKeys, policy: opts.policy }, report, problem)
    track.state = r.state
    track.seq = r.seq
    track.journal = r.journal
    effects.set(r.effectId, track)
  }

  const projection = typeof opts.projection === 'function' ? opts.projection() : opts.projection
  if (projection) {
    for (const [id, p] of projection) {
      const t = effects.get(id)
      if (t && broken.has(t.journal)) continue
      if (!t) problem({ journal: '?', seq: p.seq, effectId: id }, `effect ${id} is ${p.state} at record ${p.seq}, but the journal has no record of it`)
      else if (t.state !== p.state || t.seq !== p.seq) {
        problem({ journal: t.journal, seq: p.seq, effectId: id }, `journal ${JSON.stringify(t.journal)} record ${p.seq} should be effect ${id}'s last (${p.state}), but its records end at ${t.seq} (${t.state}); records were removed from the end`)
      }
    }
    for (const [id, t] of effects) {
      if (!projection.has(id) && !broken.has(t.journal)) problem({ journal: t.journal, seq: t.seq, effectId: id }, `effect ${id} has records but is not listed among the effects; a record was inserted`)
    }
  }
  report.journals = journals.size
  report.effects = effects.size
  report.ok = report.problems.length === 0
  report.firstBad = report.problems[0]
  return report
}

interface Keys {
  operatorKeys: ReadonlyMap<string, string>
  relayKeys: readonly TrustedKey[]
  policy?: RuleSource
}

function checkStatements(
  r: JournalRecord,
  from: State | null,
  track: EffectTrack,
  keys: Keys,
  report: VerifyReport,
  problem: (r: JournalRecord, m: string) => void,
): void {
  const signed = statementsIn(r.data)
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
      if (candidates.some((k) => verifySigned(s, k.publicKey)) && st.effectId === r.effectId && digestOk) report.receipts.valid++
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
}

function where(r: Pick<JournalRecord, 'journal' | 'seq' | 'state'>): string {
  return `journal ${JSON.stringify(r.journal)} record ${r.seq} (${r.state})`
}
