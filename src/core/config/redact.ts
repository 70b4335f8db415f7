/**
 * Scrubs secret values (resolved `${VAR}` references) from anything shown to
 * a person or a program. Longest first, so a secret containing another is
 * replaced whole rather than leaving a tail behind.
 */
export const REDACTED = '***'

export function redact(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of ordered(secrets)) out = out.split(secret).join(REDACTED)
  return out
}

/**
 * The same, for a JSON-able value: strings are scrubbed in place, so the
 * result is still valid JSON whatever the secret looks like.
 */
export function redactValue<T>(value: T, secrets: readonly string[]): T {
  const list = ordered(secrets)
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') return list.reduce((s, secret) => s.split(secret).join(REDACTED), node)
    if (Array.isArray(node)) return node.map(walk)
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [walk(k) as string, walk(v)]))
    }
    return node
  }
  return walk(value) as T
}

function ordered(secrets: readonly string[]): string[] {
  return [...new Set(secrets)].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)
}
