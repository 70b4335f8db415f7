/**
 * The notary's log: what `interlock notary serve` answers, over a NotaryStore.
 *
 * A record is written only when (docs/notary.md):
 * - its writer is trusted under the role its kind needs (agents write intend
 *   and abort, services claim, performed and failed) and its signature
 *   verifies against that key: a forged record is refused, never stored;
 * - it follows the effect chain's head (`prev`): a record sent a second time
 *   (a replay) follows a head that has moved on, and is refused;
 * - its kind may follow the attempt's state (state.ts); claim and abort go
 *   through the decision row, whose first writer wins, and the loser is
 *   answered the winner's state.
 */
import { GENESIS, asSignedRecord, recordHash, verifyRecord, WRITER_ROLE, type SignedRecord, type StoredRecord } from './records.js'
import { attemptView, attemptsOf, refusalOf, type AttemptView } from './state.js'
import { isDecision, type NotaryStore } from './store.js'
import { checkChain } from './verify.js'

export interface TrustedKeys {
  /** Agent (relay) names → public keys `ed25519:…`: who may write intend and abort. */
  agents: Readonly<Record<string, string>>
  /** Service names → public keys: who may write claim, performed and failed. */
  services: Readonly<Record<string, string>>
}

export type WriteStatus =
  /** Stored; `view` is the attempt after it. */
  | 'written'
  /** A claim or abort for an attempt already decided: nothing stored; `view` says who won. */
  | 'decided'
  /** The chain's head is not the record's `prev` (a replay, or a race): re-read and sign again. */
  | 'stale'
  /** Not allowed after the attempt's state (performed without a claim, a second intend). */
  | 'refused'
  /** The writer is not trusted under the role its kind needs. */
  | 'untrusted'
  /** The signature does not verify against the writer's trusted key. */
  | 'forged'
  /** Not a record at all. */
  | 'malformed'

export interface WriteAnswer {
  status: WriteStatus
  reason?: string
  /** The chain's head hash after the answer: what the writer signs its next record after. */
  head: string
  view?: AttemptView
}

export interface EffectView {
  effect: string
  head: string
  attempts: AttemptView[]
}

export interface NotaryLog {
  write(input: unknown): Promise<WriteAnswer>
  attempt(effect: string, attempt: number): Promise<AttemptView & { head: string }>
  effect(effect: string): Promise<EffectView>
  /** Everything wrong with an effect's stored chain (links, hashes, signatures, trust, the protocol: verify.ts): [] when whole. */
  verify(effect: string): Promise<string[]>
  close(): Promise<void>
}

export function notaryLog(store: NotaryStore, trusted: TrustedKeys): NotaryLog {
  const keyOf = (r: Pick<SignedRecord, 'kind' | 'writer'>): string | undefined => {
    const keys = WRITER_ROLE[r.kind] === 'agent' ? trusted.agents : trusted.services
    return Object.hasOwn(keys, r.writer) ? keys[r.writer] : undefined
  }
  const headOf = (chain: readonly StoredRecord[]) => chain.at(-1)?.hash ?? GENESIS

  return {
    async write(input) {
      const record = asSignedRecord(input)
      if (!record) return { status: 'malformed', reason: 'not a notary record', head: GENESIS }
      const key = keyOf(record)
      let chain = await store.chain(record.effect)
      const answer = (status: WriteStatus, reason?: string): WriteAnswer => {
        const a: WriteAnswer = { status, head: headOf(chain), view: attemptView(record.effect, record.attempt, chain) }
        return reason === undefined ? a : { ...a, reason }
      }
      if (key === undefined) return answer('untrusted', `${record.writer} is not a trusted ${WRITER_ROLE[record.kind]}, so it may not write ${record.kind}`)
      if (!verifyRecord(record, key)) return answer('forged', `the signature of this ${record.kind} does not verify against ${record.writer}'s trusted key`)
      if (record.prev !== headOf(chain)) return answer('stale', 'the record does not follow the head of its effect\'s chain (sent twice, or the chain moved on)')
      const view = attemptView(record.effect, record.attempt, chain)
      if (isDecision(record.kind) && view.state !== 'NONE' && view.state !== 'INTENDED') return answer('decided')
      const refusal = refusalOf(record.kind, view, record.writer)
      if (refusal) return answer('refused', refusal)
      const stored: StoredRecord = { ...record, seq: (chain.at(-1)?.seq ?? 0) + 1, hash: recordHash(record) }
      const result = await store.append(stored)
      chain = await store.chain(record.effect)
      if (result === 'appended') return answer('written')
      return result === 'decided' ? answer('decided') : answer('stale', 'the effect\'s chain moved on while this record was written')
    },
    async attempt(effect, n) {
      const chain = await store.chain(effect)
      return { ...attemptView(effect, n, chain), head: headOf(chain) }
    },
    async effect(effect) {
      const chain = await store.chain(effect)
      return { effect, head: headOf(chain), attempts: attemptsOf(effect, chain) }
    },
    async verify(effect) {
      return checkChain(effect, await store.chain(effect), await store.decisions(effect), trusted).problems.map((p) => p.message)
    },
    close: () => store.close(),
  }
}
