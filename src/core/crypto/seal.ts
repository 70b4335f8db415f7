/**
 * Seals: one signature per commit instead of one per record.
 *
 * A writer that signs (a relay; a gate or reconcile-effects holding the
 * relay's key; an operator re-sending an effect) hands the store a Sealer
 * with its appends. Inside the append's transaction, once the store has
 * numbered and hashed the records, it asks the sealer for one seal over the
 * hashes of every record that commit wrote for it, and stores the seal in the
 * same transaction: a record is never durable without its seal, and a seal
 * covers only records that were written (a request that lost its
 * compare-and-set is in no seal). This is how transparency logs sign one
 * checkpoint per batch of entries rather than each entry.
 *
 * A record's hash binds its journal, seq, effect, state, time, data and the
 * hash before it (stores/record-hash.ts), so a sealed record cannot be moved,
 * edited or replayed elsewhere without leaving its seal; a record forged and
 * the chain recomputed after it leaves every later record outside its seal
 * too. Each seal names the one before it in the writer's run (`prev`, `n`),
 * so a seal inserted twice, or a second seal claiming a place in the run, is
 * seen (outbox/verify-seals.ts).
 */
import { randomBytes } from 'node:crypto'
import { sha256Hex } from '../hash.js'
import type { KeyPair } from './keys.js'
import { nativeSigner } from './native-ed25519.js'
import { statementBytes } from './sign.js'
import type { SealStatement, SignerRole } from './statements.js'

/** A seal as stored beside the records it covers. */
export interface StoredSeal {
  statement: SealStatement
  signature: string
  /** The key the writer says it used: a hint for finding the trusted key, never trusted on its own. */
  publicKey: string
}

/** What a sealer is shown of each record a commit wrote for it. */
export interface SealedRecord {
  hash: string
  at: string
}

export interface Sealer {
  readonly signer: string
  readonly role: SignerRole
  /** One seal over `records` (one commit's, all with the commit's `at`); advances the run. */
  seal(records: readonly SealedRecord[]): StoredSeal
}

export interface SealerOptions {
  key: KeyPair
  /** The name verify trusts the key under (a relay's id); default the key's own name. */
  id?: string
  role: SignerRole
}

/** What the next seal of a run names as `prev`: the digest of the signed statement. */
export function sealDigest(seal: Pick<StoredSeal, 'statement' | 'signature'>): string {
  return sha256Hex(`${Buffer.from(statementBytes(seal.statement)).toString('base64url')}.${seal.signature}`)
}

export function sealer(opts: SealerOptions): Sealer {
  const sign = nativeSigner(opts.key)
  const signer = opts.id ?? opts.key.name
  const run = randomBytes(9).toString('base64url')
  let n = 0
  let prev: string | null = null
  return {
    signer,
    role: opts.role,
    seal(records) {
      if (records.length === 0) throw new Error('a seal covers at least one record')
      // A seal made for a commit that then fails is simply missing from the run: the next names it anyway,
      // since whether the commit happened may be unknown (a lost connection). verify allows gaps, never forks.
      const statement: SealStatement = { kind: 'seal', signer, role: opts.role, run, n: ++n, prev, at: records[0]!.at, records: records.map((r) => r.hash) }
      const sealed: StoredSeal = { statement, signature: sign(statementBytes(statement)), publicKey: opts.key.publicKey }
      prev = sealDigest(sealed)
      return sealed
    },
  }
}

/** A stored seal's shape, or a reason it is not one (verify reports it; nothing trusts it). */
export function readSeal(v: unknown): StoredSeal | string {
  const s = v as { statement?: Record<string, unknown>; signature?: unknown; publicKey?: unknown } | null
  if (!s || typeof s !== 'object' || typeof s.signature !== 'string' || typeof s.publicKey !== 'string' || !s.statement || typeof s.statement !== 'object') return 'is not a signed seal'
  const st = s.statement
  const strings = ['signer', 'run', 'at'] as const
  if (st.kind !== 'seal' || strings.some((f) => typeof st[f] !== 'string') || (st.role !== 'relay' && st.role !== 'operator')) return 'is not a seal statement'
  if (typeof st.n !== 'number' || !Number.isSafeInteger(st.n) || st.n < 1 || (st.prev !== null && typeof st.prev !== 'string')) return 'has no valid place in its run'
  if (!Array.isArray(st.records) || st.records.length === 0 || st.records.some((h) => typeof h !== 'string')) return 'lists no record hashes'
  return s as unknown as StoredSeal
}
