/**
 * Every journal record a relay or a gate writes carries the writer's
 * signature (statements.ts RecordStatement) in `data.recordSignature`, so a
 * record that is legal but was never written by a trusted writer (a forged
 * DISPATCHED → FAILED with the hash chain recomputed) is found offline by
 * `outbox verify`, which the chain alone cannot do: anyone who can write the
 * table can recompute it.
 *
 * The signature binds the effect, the transition, the effect's own record it
 * follows (`follows`, followsOf) and a digest of the rest of the record's
 * data. It cannot bind the record's seq or previous hash: those are assigned
 * by the store inside the append, after the writer signed, and one append may
 * write several records of one effect (a chain). Naming the record followed
 * by its own signature chains an effect's signed records to each other: each
 * signature covers the one before it, back to the proposal. Operators' acts
 * (releases, denials, resolutions) carry the operator's own signed statement
 * instead.
 *
 * Signing is node:crypto's native Ed25519 (native-ed25519.ts): one canonical
 * serialisation, one SHA-256 and one signature per record.
 */
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import { sha256Hex } from '../hash.js'
import type { State } from '../lifecycle.js'
import type { KeyPair } from './keys.js'
import { nativeSigner } from './native-ed25519.js'
import { statementBytes } from './sign.js'
import type { RecordStatement, Signed, SignerRole } from './statements.js'

/** The data field that carries a record's signature. */
export const RECORD_SIGNATURE = 'recordSignature'

/** What the signature covers of a record's data: all of it but the signature itself. */
export function recordDataDigest(data: JsonObject): string {
  if (!(RECORD_SIGNATURE in data)) return sha256Hex(canonicalJson(data))
  const { [RECORD_SIGNATURE]: _signature, ...rest } = data
  return sha256Hex(canonicalJson(rest))
}

/**
 * What a record signature following `data`'s record names it by: that
 * record's own signature when it carries one (unique: it covers the record it
 * follows in turn), else the digest of its data (an operator's act, an outbox
 * agent's proposal, each unique to its effect).
 */
export function followsOf(data: JsonObject): string {
  const sig = data[RECORD_SIGNATURE] as { signature?: unknown } | undefined
  if (sig && typeof sig === 'object' && typeof sig.signature === 'string') return sig.signature
  return sha256Hex(canonicalJson(data))
}

/** Signs the records a writer journals: returns the data to journal, signature included. */
export interface RecordSigner {
  readonly signer: string
  readonly role: SignerRole
  /** @param follows followsOf(the data of the effect's record this one follows); null for a proposal */
  sign(effectId: string, from: State | null, to: State, follows: string | null, data: JsonObject): JsonObject
}

export interface RecordSignerOptions {
  key: KeyPair
  /** The name verify trusts the key under (a relay's id); default the key's own name. */
  id?: string
  role: SignerRole
  now?: () => Date
}

export function recordSigner(opts: RecordSignerOptions): RecordSigner {
  const sign = nativeSigner(opts.key)
  const signer = opts.id ?? opts.key.name
  const now = opts.now ?? (() => new Date())
  return {
    signer,
    role: opts.role,
    sign(effectId, from, to, follows, data) {
      const statement: RecordStatement = { kind: 'record', effectId, from, to, follows, dataDigest: recordDataDigest(data), signer, role: opts.role, at: now().toISOString() }
      return { ...data, [RECORD_SIGNATURE]: { statement: statement as unknown as JsonObject, signature: sign(statementBytes(statement)), publicKey: opts.key.publicKey } }
    },
  }
}

export interface RecordSignature extends Signed<RecordStatement> {
  /** The key the writer says it used: a hint for finding the trusted key, never trusted on its own. */
  publicKey?: string
}

/**
 * The record's signature: undefined when it carries none, 'malformed' when
 * the field is there but is not a record statement with a signature.
 */
export function recordSignatureOf(data: JsonObject): RecordSignature | 'malformed' | undefined {
  const v = data[RECORD_SIGNATURE]
  if (v === undefined) return undefined
  const s = v as { statement?: Record<string, unknown>; signature?: unknown; publicKey?: unknown }
  if (!s || typeof s !== 'object' || typeof s.signature !== 'string' || !s.statement || typeof s.statement !== 'object') return 'malformed'
  const st = s.statement
  const strings = ['effectId', 'to', 'dataDigest', 'signer', 'role', 'at'] as const
  // Either binding, never both: `follows` (this version) or `after` (a seq, earlier versions).
  const follows = st.follows === undefined ? typeof st.after === 'number' : st.after === undefined && (st.follows === null || typeof st.follows === 'string')
  if (st.kind !== 'record' || strings.some((f) => typeof st[f] !== 'string') || !follows || (st.from !== null && typeof st.from !== 'string')) return 'malformed'
  if (st.role !== 'relay' && st.role !== 'operator') return 'malformed'
  return s as unknown as RecordSignature
}
