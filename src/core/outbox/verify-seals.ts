/**
 * `outbox verify`'s reading of the seals (crypto/seal.ts), before the
 * records: which record hashes a trusted writer sealed. A record is then
 * covered when its hash (checked against its content by the chain) is in a
 * seal that verifies with a trusted key: the relays' (a relay, a gate or
 * reconcile-effects holding the relay's key) or an operator's (a re-send).
 *
 * Problems, each naming the seal by its writer, run and number:
 * - not a seal, or signed by a key not trusted, or not verifying: nothing it
 *   lists is covered by it;
 * - a second seal with the place of one already read in its writer's run
 *   (a seal copied in again, or a forged one given a real seal's place);
 * - a seal that does not name the seal before it in its run, when that one
 *   is there (a run is a chain; a seal missing from it is allowed: its
 *   commit may have failed, and the records it covered are then absent too).
 * Without relay keys nothing relay-sealed can be checked: its records count
 * as unchecked, as relay signatures do.
 */
import { nativeVerifier } from '../crypto/native-ed25519.js'
import { readSeal, sealDigest, type StoredSeal } from '../crypto/seal.js'
import { statementBytes } from '../crypto/sign.js'
import type { SealStatement } from '../crypto/statements.js'
import type { WriterKeys } from './verify-writers.js'

export interface SealCounts {
  valid: number
  invalid: number
  unchecked: number
}

/** Who sealed a record: the writer, or 'unchecked' when no relay key was given to check a relay's seal. */
export type SealedBy = { signer: string; role: 'relay' | 'operator'; n: number; run: string } | 'unchecked'

export class SealIndex {
  readonly counts: SealCounts = { valid: 0, invalid: 0, unchecked: 0 }
  private readonly covered = new Map<string, SealedBy>()

  constructor(
    seals: readonly unknown[],
    keys: WriterKeys,
    problem: (message: string) => void,
  ) {
    const verify = nativeVerifier()
    const places = new Map<string, string>()
    const read: { seal: StoredSeal; digest: string }[] = []
    for (const [i, v] of seals.entries()) {
      const seal = readSeal(v)
      if (typeof seal === 'string') {
        this.counts.invalid++
        problem(`seal #${i + 1} ${seal}`)
        continue
      }
      const st = seal.statement
      const place = placeOf(st, st.n)
      const digest = sealDigest(seal)
      const first = places.get(place)
      if (first) {
        this.counts.invalid++
        problem(`${name(st)} appears ${first === digest ? 'twice: copied in again' : 'twice with different contents: one is forged'}; the second is not trusted`)
        continue
      }
      places.set(place, digest)
      read.push({ seal, digest })
    }
    // First each seal's signature, then each trusted seal's place in its run against the trusted seal before it
    // (an altered seal must not take the seal after it down with it).
    const trusted = new Map<string, { seal: StoredSeal; digest: string }>()
    const unchecked: StoredSeal[] = []
    for (const { seal, digest } of read) {
      const st = seal.statement
      const place = placeOf(st, st.n)
      let candidates: string[]
      if (st.role === 'operator') candidates = [keys.operators.get(st.signer)].filter((k): k is string => k !== undefined)
      else {
        if (keys.relays.length === 0) {
          unchecked.push(seal)
          continue
        }
        // As for record signatures: a relay keeps its id across key rotations; a given key equal to the one named counts too.
        candidates = keys.relays.filter((k) => k.name === st.signer || k.publicKey === seal.publicKey).map((k) => k.publicKey)
      }
      const message = statementBytes(st)
      if (candidates.some((k) => verify(k, message, seal.signature))) {
        trusted.set(place, { seal, digest })
        continue
      }
      this.counts.invalid++
      problem(
        candidates.length === 0
          ? `${name(st)} is by ${st.role} ${st.signer}${st.role === 'relay' ? ` with key ${seal.publicKey}` : ''}, which is not a trusted ${st.role === 'relay' ? 'relay key' : 'operator'}; the records it lists are not covered by it`
          : `${name(st)} does not verify with ${st.role} ${st.signer}'s trusted key (forged or altered); the records it lists are not covered by it`,
      )
    }
    for (const [place, t] of trusted) {
      const st = t.seal.statement
      const before = st.n > 1 ? trusted.get(placeOf(st, st.n - 1)) : undefined
      if ((st.n === 1 && st.prev !== null) || (before && st.prev !== before.digest)) {
        this.counts.invalid++
        problem(`${name(st)} does not follow the seal before it in its run: it was forged or moved`)
        trusted.delete(place)
      }
    }
    for (const t of trusted.values()) {
      this.counts.valid++
      const st = t.seal.statement
      const by: SealedBy = { signer: st.signer, role: st.role, n: st.n, run: st.run }
      for (const h of st.records) this.covered.set(h, by)
    }
    for (const seal of unchecked) {
      this.counts.unchecked++
      for (const h of seal.statement.records) if (!this.covered.has(h)) this.covered.set(h, 'unchecked')
    }
  }

  /** Who sealed the record with this hash, if anyone trusted (or unchecked) did. */
  sealed(hash: string): SealedBy | undefined {
    return this.covered.get(hash)
  }
}

/** A seal's place in its writer's run: number n of the run. */
function placeOf(st: Pick<SealStatement, 'signer' | 'run'>, n: number): string {
  return `${st.signer}\u0000${st.run}\u0000${n}`
}

function name(st: Pick<SealStatement, 'signer' | 'role' | 'run' | 'n'>): string {
  return `seal ${st.n} of ${st.role} ${st.signer} (run ${st.run})`
}
