/**
 * What operators and relays sign. Each statement is a small JSON object whose
 * canonical JSON (canonical-json.ts), after a per-kind domain prefix, is the
 * signed message (sign.ts); a statement signed as one kind can never be read
 * as another.
 *
 * - release: an operator lets a HELD effect go, bound to its digest, until expiresAt.
 * - denial: an operator refuses a HELD effect (→ REJECTED).
 * - resolution: an operator says whether an AMBIGUOUS effect happened
 *   (applied → COMMITTED, not applied → FAILED, or redispatch → DISPATCHED).
 * - receipt: a relay attests what the target answered when the effect committed.
 * - record: a relay (or an inline gate holding the relay's key, or an operator
 *   re-sending an effect) attests one journal record it wrote: the effect, the
 *   transition, the effect's record it follows, and the record's data.
 * - anchor: an operator or a relay attests every journal's head at one time
 *   (outbox/anchor.ts), so a journal cut back behind it shows.
 * - seal: a writer (a relay, a gate or reconcile-effects holding the relay's
 *   key, an operator re-sending an effect) attests every journal record one
 *   of its commits wrote, by their hashes, chained to its previous seal
 *   (seal.ts). Records written before seals carry a `record` statement each.
 * - checkpoint: an operator or a relay attests, before `outbox prune` deletes
 *   them, where the pruned records of each journal it cut end, and the
 *   archive that holds them (outbox/checkpoint-file.ts).
 *
 * `nonce` makes every statement unique, so a copy of one is recognisable as
 * a replay; `signedAt` / `at` are the signer's clock.
 */
import type { JsonObject } from '../canonical-json.js'
import { ExitCode, InterlockError } from '../errors.js'
import type { State } from '../lifecycle.js'

export interface ReleaseStatement {
  kind: 'release'
  effectId: string
  digest: string
  operator: string
  /** The rule that held the effect, as the operator saw it. */
  rule: string
  signedAt: string
  expiresAt: string
  nonce: string
}

export interface DenialStatement {
  kind: 'denial'
  effectId: string
  digest: string
  operator: string
  reason: string
  signedAt: string
  nonce: string
}

export interface ResolutionStatement {
  kind: 'resolution'
  effectId: string
  digest: string
  operator: string
  /** True: the effect happened (→ COMMITTED); false: it did not (→ FAILED, or DISPATCHED when redispatch). */
  applied: boolean
  /** Only with applied = false: send it again (→ DISPATCHED). */
  redispatch: boolean
  signedAt: string
  nonce: string
}

export interface RelayReceiptStatement {
  kind: 'receipt'
  effectId: string
  /** sha256hex of canonicalJson(receipt). */
  receiptDigest: string
  relay: string
  at: string
}

/** Who signs what they wrote: a relay (by its id) or an operator (by name). */
export type SignerRole = 'relay' | 'operator'

/** The role a key signs journal-wide statements (anchors, checkpoints) in; a notarized service's key signs none. */
export function signerRoleOf(key: { kind: string; name: string }): SignerRole {
  if (key.kind === 'relay' || key.kind === 'operator') return key.kind
  throw new InterlockError('E_KEY_KIND', ExitCode.CONFIG, `key ${key.name} is a ${key.kind} key; only an operator's or a relay's key signs this`, {
    hint: 'Use an operator key (`interlock operator keygen`) or the relay key.',
  })
}

export interface RecordStatement {
  kind: 'record'
  effectId: string
  /** The transition the record makes: the state the effect left (null: its proposal) and the one it entered. */
  from: State | null
  to: State
  /**
   * The effect's own record this one follows (record-signature.ts followsOf:
   * that record's own signature, or the digest of its data when it carries
   * none; null for a proposal): binds the signature to its place, so a signed
   * record moved to follow another record of the effect, or copied elsewhere,
   * no longer verifies. It names the record by what it holds, not by its seq,
   * because several records of one effect may be written in one commit
   * (Store.append's chains) and the store numbers them inside the append,
   * after they were signed.
   */
  follows?: string | null
  /** Written by earlier versions instead of `follows`: the seq of the record followed (0 for a proposal). */
  after?: number
  /** sha256hex of canonicalJson(the record's data without its recordSignature). */
  dataDigest: string
  signer: string
  role: SignerRole
  at: string
}

export interface AnchorStatement {
  kind: 'anchor'
  /** sha256hex of canonicalJson(heads), the anchor file's list of { journal, seq, hash }. */
  headsDigest: string
  journals: number
  signer: string
  role: SignerRole
  at: string
}

export interface CheckpointStatement {
  kind: 'checkpoint'
  /** sha256hex of canonicalJson(heads): each journal's last record pinned (a prune: its last removed record) { journal, seq, hash }. */
  headsDigest: string
  journals: number
  /** sha256hex of the archive file's bytes: the records removed, as an export. Absent when nothing was removed (`outbox checkpoint`). */
  archiveDigest?: string
  /** Records removed (a prune), or newly pinned. */
  records: number
  /** Effects removed (a prune), or settled within what was newly pinned. */
  effects: number
  signer: string
  role: SignerRole
  at: string
}

export interface SealStatement {
  kind: 'seal'
  signer: string
  role: SignerRole
  /** The writing process's own name for its run of seals (random), so two processes under one id never share a count. */
  run: string
  /** 1, 2, 3… within the run: a seal copied in again shows as a second seal of the same number. */
  n: number
  /** sealDigest() of the run's seal before this one; null for the first. */
  prev: string | null
  /** The commit's time, as the store wrote it on each of the records. */
  at: string
  /** The hashes (record-hash.ts) of every record the commit wrote for this writer, in the order written. */
  records: string[]
}

export type OperatorStatement = ReleaseStatement | DenialStatement | ResolutionStatement
export type Statement = OperatorStatement | RelayReceiptStatement | RecordStatement | AnchorStatement | CheckpointStatement | SealStatement
export type StatementKind = Statement['kind']

/**
 * The statements a record carries as acts (asSigned, statementsIn): an
 * operator's decision or a relay's receipt. A record's own signature is read
 * from its one field (record-signature.ts), an anchor from its file.
 */
export const STATEMENT_KINDS: readonly StatementKind[] = ['release', 'denial', 'resolution', 'receipt']

/** A statement with its signature (base64url of the 64-byte ed25519 signature). */
export interface Signed<S extends Statement = Statement> {
  statement: S
  signature: string
}

/** The domain-separation prefix of a kind: part of the signed bytes. */
export function domainPrefix(kind: StatementKind): string {
  return `interlock/${kind}/v1\n`
}

/** As stored in a journal record's data. */
export function signedJson(s: Signed): JsonObject {
  return { statement: s.statement as unknown as JsonObject, signature: s.signature }
}

/** Reads a Signed statement from journal data; undefined when it is not shaped like one. */
export function asSigned(v: unknown): Signed<OperatorStatement | RelayReceiptStatement> | undefined {
  if (!v || typeof v !== 'object') return undefined
  const s = v as { statement?: { kind?: unknown }; signature?: unknown }
  if (!s.statement || typeof s.statement !== 'object' || typeof s.signature !== 'string') return undefined
  if (!STATEMENT_KINDS.includes(s.statement.kind as StatementKind)) return undefined
  return s as Signed<OperatorStatement | RelayReceiptStatement>
}
