/**
 * The state of one attempt at the notary (docs/notary.md, "States of one
 * attempt"), folded from its records, and which record may come next.
 */
import type { NotaryKind, StoredRecord } from './records.js'

export type AttemptState = 'NONE' | 'INTENDED' | 'CLAIMED' | 'ABORTED' | 'PERFORMED' | 'FAILED'

export interface AttemptView {
  effect: string
  attempt: number
  state: AttemptState
  /** The service that claimed it (CLAIMED, PERFORMED, FAILED). */
  claimedBy?: string
  /** The attempt's records, oldest first. */
  records: StoredRecord[]
}

const AFTER: Record<NotaryKind, AttemptState> = {
  intend: 'INTENDED',
  claim: 'CLAIMED',
  abort: 'ABORTED',
  performed: 'PERFORMED',
  failed: 'FAILED',
}

export function attemptView(effect: string, attempt: number, chain: readonly StoredRecord[]): AttemptView {
  const records = chain.filter((r) => r.attempt === attempt)
  let state: AttemptState = 'NONE'
  let claimedBy: string | undefined
  for (const r of records) {
    state = AFTER[r.kind]
    if (r.kind === 'claim') claimedBy = r.writer
  }
  return claimedBy === undefined ? { effect, attempt, state, records } : { effect, attempt, state, claimedBy, records }
}

/** Every attempt of an effect the chain names, in order. */
export function attemptsOf(effect: string, chain: readonly StoredRecord[]): AttemptView[] {
  const numbers = [...new Set(chain.map((r) => r.attempt))].sort((a, b) => a - b)
  return numbers.map((n) => attemptView(effect, n, chain))
}

/**
 * Why `kind` may not follow an attempt in `state` (undefined: it may). claim
 * and abort are settled by the decision row, not here, except that neither
 * follows an outcome.
 */
export function refusalOf(kind: NotaryKind, view: AttemptView, writer: string): string | undefined {
  const s = view.state
  switch (kind) {
    case 'intend':
      return s === 'NONE' ? undefined : `attempt ${view.attempt} is ${s}: intend comes first`
    case 'claim':
    case 'abort':
      return undefined
    case 'performed':
    case 'failed':
      if (s !== 'CLAIMED') return `attempt ${view.attempt} is ${s}: ${kind} only follows a claim`
      return view.claimedBy === writer ? undefined : `attempt ${view.attempt} was claimed by ${view.claimedBy}, not ${writer}`
  }
}
