/**
 * A store whose appends are rewritten on their way in: the secrets guard
 * (secrets/redacting-store.ts) and the record signer (signing-store.ts) each
 * change what a request journals and nothing else.
 *
 * A rewrite that throws rejects the append before the store sees any of it,
 * as the store's own checks would: append() fails by its promise, never by
 * throwing where it is called.
 */
import type { AppendRequest, AppendResult, Store } from './store.js'

export function rewritingStore(store: Store, rewrite: (requests: AppendRequest[]) => AppendRequest[]): Store {
  const append = (requests: AppendRequest[]): Promise<AppendResult[]> => {
    let rewritten: AppendRequest[]
    try {
      rewritten = rewrite(requests)
    } catch (e) {
      return Promise.reject(e)
    }
    return store.append(rewritten)
  }
  // Only append changes; every other member is the store's own, bound to it (stores keep private state).
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') return append
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
