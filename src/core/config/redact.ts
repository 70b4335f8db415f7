/**
 * Scrubs secret values (resolved `${VAR}` references) from anything shown to
 * a person or a program, in every spelling a secret takes on the way (quoted
 * in JSON, percent-encoded in a URL: secrets/matcher.ts). Longest first, so a
 * secret containing another is replaced whole rather than leaving a tail behind.
 */
import { REDACTED, SecretMatcher } from '../secrets/matcher.js'

export { REDACTED }

export function redact(text: string, secrets: readonly string[]): string {
  return new SecretMatcher(secrets).redact(text)
}

/**
 * The same, for a JSON-able value: strings are scrubbed in place, so the
 * result is still valid JSON whatever the secret looks like.
 */
export function redactValue<T>(value: T, secrets: readonly string[]): T {
  return new SecretMatcher(secrets).redactValue(value)
}
