/**
 * The checkpoint: where each journal's settled history ends (journal, seq,
 * hash of its last record), signed by an operator or a relay, stored in the
 * store (checkpoints). Two commands make one:
 *
 * - `outbox prune`: the heads are each cut journal's last removed record, and
 *   the checkpoint names the archive that holds what was removed (written
 *   beside it). A journal is a hash chain, so once its oldest records are
 *   deleted its first remaining record points at a record nobody can read.
 *   The checkpoint vouches for that link: its signer verified the journals
 *   before anything was deleted, and the head's hash covers the whole chain
 *   before it, which the archive holds and `outbox verify --file <archive>`
 *   checks on its own.
 * - `outbox checkpoint` (checkpoint.ts): nothing is removed and there is no
 *   archive; the heads pin each journal's settled prefix, verified once by the
 *   signer. Records before a pin are not read again by the next checkpoint,
 *   nor by recovery; `outbox verify` still reads them, and a journal no
 *   longer holding the pinned record there is rewritten at or before it,
 *   however well its chain was recomputed.
 *
 * `outbox verify` checks every trusted checkpoint's heads against the
 * records still there, and takes a journal that starts right after the head
 * of a trusted checkpoint that pruned it as verified up to it; a journal that
 * starts anywhere else, and a checkpoint whose signature does not verify with
 * a trusted key, are problems.
 *
 * Document (JSON):
 *   { "format": "interlock-checkpoint/v1", "store": "sqlite" | "postgres",
 *     "heads": [{ "journal", "seq", "hash" }, ...]   -- sorted by journal
 *     "archive": { "file", "sha256", "records", "effects" },   -- prune only
 *     "checkpoint": { "statement": CheckpointStatement, "signature", "publicKey" } }
 * The statement signs sha256hex(canonicalJson(heads)) and the archive's digest
 * (no archive digest: it pruned nothing).
 */
import { closeSync, fsyncSync, writeSync } from 'node:fs'
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { signerRoleOf } from '../crypto/statements.js'
import { signStatement, verifySigned } from '../crypto/sign.js'
import type { CheckpointStatement, Signed, SignerRole } from '../crypto/statements.js'
import { sha256Hex } from '../hash.js'
import { headsDigest, type JournalHead } from './anchor-file.js'
import { openNewFile } from './new-file.js'
import type { TrustedKey } from './verify.js'

export const CHECKPOINT_FORMAT = 'interlock-checkpoint/v1'

export interface ArchiveRef {
  /** The archive's file name, as written (where it was put is the operator's to keep). */
  file: string
  sha256: string
  records: number
  effects: number
}

export interface CheckpointFile {
  format: typeof CHECKPOINT_FORMAT
  store: string
  heads: JournalHead[]
  /** What `outbox prune` removed; absent from a checkpoint that removed nothing (`outbox checkpoint`). */
  archive?: ArchiveRef
  checkpoint: Signed<CheckpointStatement> & { publicKey: string }
}

/** What a checkpoint covers: the archive of a prune, or, removing nothing, how many records and settled effects it pins. */
export type CheckpointCovers = ArchiveRef | { records: number; effects: number }

/** A checkpoint as verify judged it. */
export interface JudgedCheckpoint {
  digest: string
  heads: ReadonlyMap<string, { seq: number; hash: string }>
  signer: string
  role: SignerRole | string
  at: string
  /** 'valid': signed by a trusted key; 'unchecked': by a relay, and no relay key was given; 'invalid': neither. */
  status: 'valid' | 'unchecked' | 'invalid'
  /** Why it is not trusted (status 'invalid'). */
  why?: string
  /** It removed what its heads end (`outbox prune`): a journal may start right after them. */
  pruned: boolean
}

export function signCheckpoint(heads: readonly JournalHead[], store: string, covers: CheckpointCovers, key: KeyPair, now: Date): CheckpointFile {
  const sorted = [...heads].sort((a, b) => (a.journal < b.journal ? -1 : a.journal > b.journal ? 1 : 0))
  const archive = 'sha256' in covers ? covers : undefined
  const statement: CheckpointStatement = {
    kind: 'checkpoint',
    headsDigest: headsDigest(sorted),
    journals: sorted.length,
    ...(archive ? { archiveDigest: archive.sha256 } : {}),
    records: covers.records,
    effects: covers.effects,
    signer: key.name,
    role: signerRoleOf(key),
    at: now.toISOString(),
  }
  const signed = { ...signStatement(statement, key.seed), publicKey: key.publicKey }
  return archive ? { format: CHECKPOINT_FORMAT, store, heads: sorted, archive, checkpoint: signed } : { format: CHECKPOINT_FORMAT, store, heads: sorted, checkpoint: signed }
}

/** The checkpoint's key in the store: the digest of what was signed and its signature. */
export function checkpointDigest(file: Pick<CheckpointFile, 'checkpoint'>): string {
  const { statement, signature } = file.checkpoint
  return sha256Hex(canonicalJson({ statement, signature } as unknown as JsonObject))
}

export function writeCheckpoint(path: string, file: CheckpointFile): void {
  const fd = openNewFile(path, 'checkpoint', 'E_CHECKPOINT_FILE')
  try {
    writeSync(fd, `${JSON.stringify(file, null, 2)}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

export interface CheckpointTrust {
  operators: ReadonlyMap<string, string>
  relays: readonly TrustedKey[]
}

/** A stored or exported checkpoint document, judged against the trusted keys; never throws. */
export function judgeCheckpoint(doc: unknown, trust: CheckpointTrust): JudgedCheckpoint {
  const f = (doc ?? {}) as Partial<CheckpointFile>
  const st = (f.checkpoint?.statement ?? {}) as Partial<CheckpointStatement>
  const heads = new Map<string, { seq: number; hash: string }>()
  for (const h of Array.isArray(f.heads) ? (f.heads as Partial<JournalHead>[]) : []) {
    if (h && typeof h.journal === 'string' && Number.isSafeInteger(h.seq) && typeof h.hash === 'string') heads.set(h.journal, { seq: h.seq!, hash: h.hash })
  }
  const base = {
    digest: f.checkpoint && typeof f.checkpoint.signature === 'string' ? checkpointDigest(f as CheckpointFile) : '?',
    heads,
    signer: typeof st.signer === 'string' ? st.signer : '?',
    role: typeof st.role === 'string' ? st.role : '?',
    at: typeof st.at === 'string' ? st.at : '?',
    pruned: f.archive !== undefined,
  }
  const invalid = (why: string): JudgedCheckpoint => ({ ...base, status: 'invalid', why })
  if (f.format !== CHECKPOINT_FORMAT || !Array.isArray(f.heads) || st.kind !== 'checkpoint' || !f.checkpoint) return invalid(`is not an Interlock checkpoint (${CHECKPOINT_FORMAT})`)
  if (heads.size !== f.heads.length) return invalid('has a malformed head')
  if (st.headsDigest !== headsDigest(f.heads as JournalHead[]) || st.journals !== heads.size) return invalid('lists other heads than its signature covers (altered)')
  // The signature covers the archive's digest, or that there is none: a checkpoint cannot be turned from one kind into the other.
  if (f.archive === undefined ? st.archiveDigest !== undefined : !f.archive || st.archiveDigest !== f.archive.sha256) {
    return invalid('names another archive than its signature covers (altered)')
  }
  let candidates: string[]
  if (st.role === 'operator') candidates = [trust.operators.get(base.signer)].filter((k): k is string => k !== undefined)
  else if (st.role === 'relay') {
    if (trust.relays.length === 0) return { ...base, status: 'unchecked' }
    candidates = trust.relays.filter((k) => k.name === base.signer || k.publicKey === f.checkpoint!.publicKey).map((k) => k.publicKey)
  } else return invalid('is signed by neither an operator nor a relay')
  if (candidates.length === 0) {
    return invalid(st.role === 'operator' ? `is signed by operator "${base.signer}", who is not a trusted operator` : `is signed by relay "${base.signer}", whose key is not a trusted relay key`)
  }
  if (!candidates.some((k) => verifySigned(f.checkpoint as Signed<CheckpointStatement>, k))) return invalid(`carries a signature by ${st.role} ${base.signer} that does not verify (forged or altered)`)
  return { ...base, status: 'valid' }
}
