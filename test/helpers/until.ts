/** Waits on a condition, not a clock: resolves with the first truthy value of `f`, polled every 25 ms; fails naming `what` after `ms`. */
export async function until<T>(what: string, f: () => T | Promise<T>, ms = 30_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms
  for (;;) {
    const v = await f()
    if (v) return v as NonNullable<T>
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}
