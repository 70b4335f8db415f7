/**
 * A secret is found however it was written down on its way back: quoted in
 * JSON, percent-encoded by a URL parser or a form, escaped in an HTML page.
 * `redact` and `redactValue` (every printed line and --json document) rely on it.
 */
import { describe, expect, it } from 'vitest'
import { redact, redactValue } from '../../src/core/config/redact.js'
import { SecretMatcher } from '../../src/core/secrets/matcher.js'

const SECRET = `tok"en\\ab <c>{d}|'ü~9`

/** The same secret as each channel writes it. */
const SPELLINGS: [string, string][] = [
  ['as is', SECRET],
  ['JSON-escaped', JSON.stringify(SECRET).slice(1, -1)],
  ['JSON-escaped, non-ASCII as \\u (Python)', JSON.stringify(SECRET).slice(1, -1).replace('ü', '\\u00fc')],
  ['encodeURIComponent', encodeURIComponent(SECRET)],
  ['encodeURIComponent, lower-case hex', encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
  ['a URL path (WHATWG: \\ becomes /)', new URL(`http://h/${SECRET}`).pathname.slice(1)],
  ['a URL query (WHATWG)', new URL(`http://h/?q=${SECRET}`).search.slice(3)],
  ['a form (URLSearchParams: space as +)', new URLSearchParams({ q: SECRET }).toString().slice(2)],
  ['HTML-escaped', SECRET.replace(/["'<>&]/g, (c) => `&#${c.charCodeAt(0)};`).replace('&#34;', '&quot;')],
]

describe('SecretMatcher', () => {
  it.each(SPELLINGS)('finds the secret %s, inside other text', (_how, spelled) => {
    const m = new SecretMatcher([SECRET])
    expect(m.redact(`before ${spelled} after`)).toBe('before *** after')
    expect(m.test(spelled)).toBe(true)
  })

  it('leaves text without the secret alone, and a piece of the secret is not the secret', () => {
    const m = new SecretMatcher([SECRET])
    expect(m.redact('tok"en\\ab <c>')).toBe('tok"en\\ab <c>')
    expect(m.empty).toBe(false)
    expect(new SecretMatcher(['', 'ab'], { minLength: 3 }).empty).toBe(true)
  })

  it('names where in a value the secret is, never the secret', () => {
    const m = new SecretMatcher([SECRET])
    expect(m.locate({ to: ['a@example.com', { note: `x${encodeURIComponent(SECRET)}` }] }, 'args')).toBe('args.to[1].note')
    expect(m.locate({ [SECRET]: 1 }, 'args')).toBe('args (a key)')
    expect(m.locate({ fine: 'yes' }, 'args')).toBeUndefined()
  })
})

describe('redact and redactValue (all output)', () => {
  it('scrub the secret JSON-escaped and percent-encoded, not only as written', () => {
    expect(redact(`{"token":${JSON.stringify(SECRET)}}`, [SECRET])).toBe('{"token":"***"}')
    expect(redact(`GET /hooks/${encodeURIComponent(SECRET)} answered 404`, [SECRET])).toBe('GET /hooks/*** answered 404')
    expect(redactValue({ reason: `Cannot POST /x?t=${new URL(`http://h/?q=${SECRET}`).search.slice(3)}` }, [SECRET])).toEqual({ reason: 'Cannot POST /x?t=***' })
  })
})
