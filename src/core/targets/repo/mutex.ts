/**
 * One queue per key (a repository's real path), shared by every RepoTarget in
 * the process: git has one index per working tree, so two targets on one
 * repository (say, two branches) must take turns too. Across processes git's
 * own lock files serialise, and locks.ts tells a live lock from a stale one.
 */
const tails = new Map<string, Promise<void>>()

export async function withKeyedLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(key) ?? Promise.resolve()
  let release!: () => void
  const mine = new Promise<void>((resolve) => (release = resolve))
  const tail = previous.then(() => mine)
  tails.set(key, tail)
  await previous
  try {
    return await fn()
  } finally {
    release()
    if (tails.get(key) === tail) tails.delete(key)
  }
}
