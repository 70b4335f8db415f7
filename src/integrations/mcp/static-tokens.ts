/**
 * Static bearer tokens of [[targets.<name>.proxy_http.tokens]], each proving
 * a named principal. A presented token is hashed and compared with every
 * configured token's hash in constant time, all of them each time: how long
 * the answer takes says nothing about how close a guess came, nor which
 * token matched. (Hashing first makes the compared values equal in length,
 * which timingSafeEqual needs, without revealing the tokens' lengths.)
 */
import { createHash, timingSafeEqual } from 'node:crypto'

export const MIN_TOKEN_LENGTH = 16

export class StaticTokens {
  private readonly entries: { digest: Buffer; principal: string }[]

  constructor(tokens: readonly { principal: string; token: string }[]) {
    this.entries = tokens.map((t) => ({ digest: digest(t.token), principal: t.principal }))
  }

  get size(): number {
    return this.entries.length
  }

  /** The principals, each once, for the log line at start. */
  principals(): string[] {
    return [...new Set(this.entries.map((e) => e.principal))]
  }

  /** The principal the token proves, if it is one of ours. */
  find(token: string): string | undefined {
    const presented = digest(token)
    let found: string | undefined
    for (const entry of this.entries) {
      const same = timingSafeEqual(presented, entry.digest)
      if (same && found === undefined) found = entry.principal
    }
    return found
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest()
}
