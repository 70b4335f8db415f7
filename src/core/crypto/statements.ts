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
 *
 * `nonce` makes every statement unique, so a copy of one is recognisable as
 * a replay; `signedAt` / `at` are the signer's clock.
 */
import type { JsonObject } from '../canonical-json.js'

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

export type OperatorStatement = ReleaseStatement | DenialStatement | ResolutionStatement
export type Statement = OperatorStatement | RelayReceiptStatement
export type StatementKind = Statement['kind']

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
export function asSigned(v: unknown): Signed | undefined {
  if (!v || typeof v !== 'object') return undefined
  const s = v as { statement?: { kind?: unknown }; signature?: unknown }
  if (!s.statement || typeof s.statement !== 'object' || typeof s.signature !== 'string') return undefined
  if (!STATEMENT_KINDS.includes(s.statement.kind as StatementKind)) return undefined
  return s as Signed
}
