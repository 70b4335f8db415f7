/**
 * The journal-head anchor (`outbox anchor`, `outbox verify --anchor`): every
 * journal's head (journal, seq, hash) at one moment, signed by an operator or
 * a relay, kept outside the store.
 *
 * Why: the hash chain and the record signatures only ever look backwards. A
 * journal cut back to an earlier record, with the store's head and effects
 * rows rewritten to match, is a shorter journal every check accepts. An
 * anchor kept elsewhere remembers how far each journal reached: a journal
 * that no longer reaches its anchored head, or reaches a different record
 * there, fails verification. And since a head's hash covers the whole chain
 * before it, the anchor's signature covers every record up to it: records
 * written before records were signed are vouched for by an anchor taken
 * after them.
 *
 * File (JSON, never overwritten):
 *   { "format": "interlock-anchor/v1", "store": "sqlite" | "postgres",
 *     "heads": [{ "journal", "seq", "hash" }, ...]   -- sorted by journal
 *     "anchor": { "statement": AnchorStatement, "signature", "publicKey" } }
 * The statement signs sha256hex(canonicalJson(heads)).
 */
import { closeSync, readFileSync, writeSync } from 'node:fs'
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { signerRoleOf } from '../crypto/statements.js'
import { signStatement, verifySigned } from '../crypto/sign.js'
import type { AnchorStatement, Signed, SignerRole } from '../crypto/statements.js'
import { IntegrityError, NotFoundError } from '../errors.js'
import { sha256Hex } from '../hash.js'
import { openNewFile } from './new-file.js'
import type { TrustedKey } from './verify.js'

export const ANCHOR_FORMAT = 'interlock-anchor/v1'

export interface JournalHead {
  journal: string
  seq: number
  hash: string
}

export interface AnchorFile {
  format: typeof ANCHOR_FORMAT
  store: string
  heads: JournalHead[]
  anchor: Signed<AnchorStatement> & { publicKey: string }
}

/** An anchor whose signature verified: what verify checks the journals against. */
export interface TrustedAnchor {
  path: string
  heads: ReadonlyMap<string, { seq: number; hash: string }>
  signer: string
  role: SignerRole
  at: string
}

export function headsDigest(heads: readonly JournalHead[]): string {
  return sha256Hex(canonicalJson(heads as unknown as JsonObject[]))
}

export function signAnchor(heads: readonly JournalHead[], store: string, key: KeyPair, now: Date): AnchorFile {
  const sorted = [...heads].sort((a, b) => (a.journal < b.journal ? -1 : a.journal > b.journal ? 1 : 0))
  const statement: AnchorStatement = { kind: 'anchor', headsDigest: headsDigest(sorted), journals: sorted.length, signer: key.name, role: signerRoleOf(key), at: now.toISOString() }
  return { format: ANCHOR_FORMAT, store, heads: sorted, anchor: { ...signStatement(statement, key.seed), publicKey: key.publicKey } }
}

export function writeAnchor(path: string, file: AnchorFile): void {
  const fd = openNewFile(path, 'anchor', 'E_ANCHOR_FILE')
  try {
    writeSync(fd, `${JSON.stringify(file, null, 2)}\n`)
  } finally {
    closeSync(fd)
  }
}

export interface AnchorTrust {
  operators: ReadonlyMap<string, string>
  relays: readonly TrustedKey[]
}

/** Reads an anchor file and checks its signature against the trusted keys; refuses anything else. */
export function readAnchor(path: string, trust: AnchorTrust): TrustedAnchor {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (cause) {
    throw new NotFoundError(`anchor file ${path} cannot be read: ${(cause as Error).message}`, {
      hint: 'Make one with `interlock outbox anchor --out <file>`, and keep it outside the store.',
      context: { path },
      cause,
    })
  }
  const bad = (why: string) =>
    new IntegrityError(`anchor file ${path} ${why}`, { hint: 'Use an anchor made by `interlock outbox anchor`, kept where the store\'s writers cannot change it.', context: { path } })
  let f: Partial<AnchorFile>
  try {
    f = JSON.parse(text) as Partial<AnchorFile>
  } catch {
    throw bad('is not JSON')
  }
  if (!f || f.format !== ANCHOR_FORMAT || !Array.isArray(f.heads) || !f.anchor || typeof f.anchor !== 'object') throw bad(`is not an Interlock anchor (${ANCHOR_FORMAT})`)
  const st = f.anchor.statement as Partial<AnchorStatement> | undefined
  if (!st || st.kind !== 'anchor' || typeof st.signer !== 'string' || (st.role !== 'operator' && st.role !== 'relay')) throw bad('carries no anchor statement')
  const heads = new Map<string, { seq: number; hash: string }>()
  for (const h of f.heads as Partial<JournalHead>[]) {
    if (!h || typeof h.journal !== 'string' || !Number.isSafeInteger(h.seq) || typeof h.hash !== 'string') throw bad('has a malformed head')
    heads.set(h.journal, { seq: h.seq!, hash: h.hash })
  }
  const candidates =
    st.role === 'operator'
      ? [trust.operators.get(st.signer)].filter((k): k is string => k !== undefined)
      : trust.relays.filter((k) => k.name === st.signer || k.publicKey === f.anchor!.publicKey).map((k) => k.publicKey)
  if (candidates.length === 0) {
    throw bad(
      st.role === 'operator'
        ? `is signed by operator "${st.signer}", who is not a trusted operator in interlock.toml`
        : `is signed by relay "${st.signer}", whose key is not a trusted relay key ([relay] key, --relay-key)`,
    )
  }
  const signed = f.anchor as Signed<AnchorStatement>
  if (!candidates.some((k) => verifySigned(signed, k))) throw bad(`carries a signature by ${st.role} ${st.signer} that does not verify (forged or altered)`)
  if (st.headsDigest !== headsDigest(f.heads as JournalHead[]) || st.journals !== heads.size) throw bad('lists other heads than its signature covers (altered)')
  return { path, heads, signer: st.signer, role: st.role, at: String(st.at) }
}
