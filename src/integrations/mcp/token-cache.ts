/**
 * Access tokens already verified, so a session's every request (MCP clients
 * send the token with each one) costs a map lookup instead of a signature
 * check. An entry lives until the token expires; past `max` entries the
 * least recently used goes (a Map keeps insertion order: a hit is moved to
 * the end). Only successes are kept: a bad token is checked again each time,
 * and cannot push good ones out by being sent many times.
 */
export class TokenCache<V> {
  private readonly entries = new Map<string, { value: V; untilMs: number }>()

  constructor(
    private readonly max = 1024,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    this.entries.delete(key)
    if (entry.untilMs <= this.now()) return undefined
    this.entries.set(key, entry)
    return entry.value
  }

  set(key: string, value: V, untilMs: number): void {
    if (untilMs <= this.now()) return
    this.entries.delete(key)
    this.entries.set(key, { value, untilMs })
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!)
  }

  get size(): number {
    return this.entries.size
  }
}
