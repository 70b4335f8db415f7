/**
 * What both stores do inside an append's transaction once its records are
 * numbered and hashed: one seal per sealer over the records written with it
 * (crypto/seal.ts). A request that lost its compare-and-set wrote nothing and
 * is in no seal.
 */
import type { Sealer, StoredSeal } from '../crypto/seal.js'
import type { AppendRequest, AppendResult } from './store.js'

export function sealsOf(requests: readonly AppendRequest[], results: readonly AppendResult[]): StoredSeal[] {
  let bySealer: Map<Sealer, { hash: string; at: string }[]> | undefined
  requests.forEach((r, i) => {
    const res = results[i]
    if (!r.sealer || !res?.ok) return
    bySealer ??= new Map()
    let list = bySealer.get(r.sealer)
    if (!list) bySealer.set(r.sealer, (list = []))
    list.push({ hash: res.record.hash, at: res.record.at })
  })
  return bySealer ? [...bySealer].map(([sealer, records]) => sealer.seal(records)) : []
}
