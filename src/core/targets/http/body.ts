/**
 * Response bodies: read with a size limit, parsed when they are JSON, and
 * scrubbed of secrets before anything from them reaches an error or a receipt
 * (a service may echo a request header back, as httpbin does).
 */
import type { JsonValue } from '../../canonical-json.js'
import { SecretMatcher } from '../../secrets/matcher.js'

/** Bodies larger than this are cut: a receipt is a record, not an archive. */
export const BODY_LIMIT = 256 * 1024

export async function readLimited(body: AsyncIterable<Uint8Array> & { destroy?(): unknown }, limit = BODY_LIMIT): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const buf = Buffer.from(chunk)
    if (size + buf.length > limit) {
      chunks.push(buf.subarray(0, limit - size))
      body.destroy?.()
      break
    }
    chunks.push(buf)
    size += buf.length
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** JSON when it parses as JSON, otherwise the text itself. */
export function parseBody(text: string): JsonValue {
  if (text.trim() === '') return null
  try {
    return JSON.parse(text) as JsonValue
  } catch {
    return text
  }
}

/**
 * Each secret, and for "Scheme token" values (Authorization: Bearer …) the
 * token alone too. Very short values are skipped: replacing "1" everywhere
 * would hide more than it protects.
 */
export function secretsOf(values: Iterable<string>): string[] {
  const out = new Set<string>()
  for (const v of values) {
    for (const candidate of [v, v.includes(' ') ? v.slice(v.indexOf(' ') + 1) : '']) {
      if (candidate.trim().length >= 4) out.add(candidate.trim())
    }
  }
  return [...out].sort((a, b) => b.length - a.length)
}

/** What scrubbing leaves in place of a secret in a service's answer. */
export const SCRUBBED = '[redacted]'

/** The text without any secret, in any spelling (quoted in JSON, percent-encoded: secrets/matcher.ts). */
export function scrub(text: string, secrets: readonly string[]): string {
  return matcherOf(secrets).redact(text, SCRUBBED)
}

/** The same inside a parsed body: a secret JSON-escaped in the text is plain once parsed. */
export function scrubValue<T>(value: T, secrets: readonly string[]): T {
  return matcherOf(secrets).redactValue(value, SCRUBBED)
}

// A client scrubs every answer with the same list: compile it once.
const matchers = new WeakMap<readonly string[], SecretMatcher>()
function matcherOf(secrets: readonly string[]): SecretMatcher {
  let m = matchers.get(secrets)
  if (!m) matchers.set(secrets, (m = new SecretMatcher(secrets)))
  return m
}

/** The service's own words for a refusal: Stripe `error.message`, GitHub `message`, SendGrid `errors[0].message`, or the text. */
export function serviceMessage(body: JsonValue): string {
  const pick = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined)
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const err = body.error
    const errors = body.errors
    const found =
      (err && typeof err === 'object' && !Array.isArray(err) ? pick(err.message) : pick(err)) ??
      pick(body.message) ??
      (Array.isArray(errors) && errors[0] && typeof errors[0] === 'object' && !Array.isArray(errors[0]) ? pick(errors[0].message) : undefined) ??
      pick(body.detail)
    if (found) return truncate(found)
    return truncate(JSON.stringify(body))
  }
  return truncate(typeof body === 'string' ? body : JSON.stringify(body))
}

function truncate(s: string, max = 500): string {
  const one = s.replace(/\s+/g, ' ').trim()
  return one.length > max ? `${one.slice(0, max)}…` : one
}
