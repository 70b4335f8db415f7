/**
 * How interlock.toml names principals (who asked for an effect, effect.ts):
 * exactly (`"token:ci-bot"`), or by what they start with, written with a
 * trailing `*` (`"token:*"`: every static bearer token; `"oauth:https://id.example.com#*"`:
 * every subject of one issuer). A policy rule's `principal` and an mcp
 * target's `allow` / `deny` lists use it.
 */
export function principalMatches(pattern: string, principal: string | undefined): boolean {
  if (principal === undefined) return false
  return pattern.endsWith('*') ? principal.startsWith(pattern.slice(0, -1)) : principal === pattern
}

/** The first pattern of `patterns` that names `principal`, if any. */
export function matchingPattern(patterns: readonly string[], principal: string | undefined): string | undefined {
  return patterns.find((p) => principalMatches(p, principal))
}
