/**
 * The notary's records (docs/notary.md, "Records"): one per thing a party
 * says about one attempt of one effect, signed by the party that says it.
 *
 * The signature is ed25519 over `interlock/notary/v1\n` + the canonical JSON
 * of `{ effect, attempt, kind, writer, at, body, prev }`, where `prev` is the
 * hash of the record before it in the effect's chain (64 zeros for the first).
 * Binding `prev` means a record is valid in one place only: a copy sent again
 * (a replay) no longer follows the chain's head and is refused, and a record
 * moved elsewhere in a chain no longer verifies. The notary signs nothing of
 * its own; it keeps what the parties signed.
 */
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import { nativeSeedSigner, nativeVerifier } from '../crypto/native-ed25519.js'
import type { KeyPair } from '../crypto/keys.js'
import { sha256Hex } from '../hash.js'

export const NOTARY_KINDS = ['intend', 'claim', 'performed', 'failed', 'abort'] as const
export type NotaryKind = (typeof NOTARY_KINDS)[number]

/** Who writes each kind: the agent announces and aborts, the service claims and reports. */
export const WRITER_ROLE: Record<NotaryKind, NotaryRole> = {
  intend: 'agent',
  abort: 'agent',
  claim: 'service',
  performed: 'service',
  failed: 'service',
}
export type NotaryRole = 'agent' | 'service'

export const GENESIS = '0'.repeat(64)
const PREFIX = 'interlock/notary/v1\n'

/** What the writer signs. */
export interface NotaryStatement {
  effect: string
  attempt: number
  kind: NotaryKind
  /** The writer's name, trusted under its role in [notary] (agents or services). */
  writer: string
  at: string
  body: JsonObject
  /** The hash of the record this one follows in the effect's chain (GENESIS for the first). */
  prev: string
}

export interface SignedRecord extends NotaryStatement {
  signature: string
}

/** A record as the notary keeps it: numbered in its effect's chain, with its own hash. */
export interface StoredRecord extends SignedRecord {
  seq: number
  hash: string
}

function statementBytes(s: NotaryStatement): Uint8Array {
  const { effect, attempt, kind, writer, at, body, prev } = s
  return new TextEncoder().encode(PREFIX + canonicalJson({ effect, attempt, kind, writer, at, body, prev }))
}

// Native Ed25519 (OpenSSL): every notarized effect signs and checks several records on both sides, and
// @noble/ed25519 costs about 1.5 ms a verification here. Records are checked only against keys the
// notary or the agent already trusts (crypto/native-ed25519.ts says why that is enough).
const signNative = nativeSeedSigner()
const verifyNative = nativeVerifier()

export function signRecord(statement: NotaryStatement, key: Pick<KeyPair, 'seed'>): SignedRecord {
  return { ...statement, signature: signNative(key.seed, statementBytes(statement)) }
}

/** True only for a well-formed signature by `publicKey` over exactly this record; never throws. */
export function verifyRecord(record: SignedRecord, publicKey: string): boolean {
  let bytes: Uint8Array
  try {
    bytes = statementBytes(record)
  } catch {
    return false
  }
  return verifyNative(publicKey, bytes, record.signature)
}

/** The chain hash of a signed record: covers the statement and its signature. */
export function recordHash(r: SignedRecord): string {
  const { effect, attempt, kind, writer, at, body, prev, signature } = r
  return sha256Hex(canonicalJson({ effect, attempt, kind, writer, at, body, prev, signature }))
}

/** The shape check at the edge (HTTP bodies); undefined when `v` is not a signed record. */
export function asSignedRecord(v: unknown): SignedRecord | undefined {
  const r = v as Partial<SignedRecord> | null
  if (!r || typeof r !== 'object') return undefined
  if (typeof r.effect !== 'string' || !/^[0-9a-f]{64}$/.test(r.effect)) return undefined
  if (typeof r.attempt !== 'number' || !Number.isInteger(r.attempt) || r.attempt < 1 || r.attempt > 1_000_000) return undefined
  if (!NOTARY_KINDS.includes(r.kind as NotaryKind)) return undefined
  if (typeof r.writer !== 'string' || r.writer.length === 0 || r.writer.length > 100) return undefined
  if (typeof r.at !== 'string' || Number.isNaN(Date.parse(r.at))) return undefined
  if (!r.body || typeof r.body !== 'object' || Array.isArray(r.body)) return undefined
  if (typeof r.prev !== 'string' || !/^[0-9a-f]{64}$/.test(r.prev)) return undefined
  if (typeof r.signature !== 'string') return undefined
  const { effect, attempt, kind, writer, at, body, prev, signature } = r as SignedRecord
  return { effect, attempt, kind, writer, at, body, prev, signature }
}
