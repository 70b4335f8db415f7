/**
 * Finds secret values in text however they were written down on the way.
 *
 * A value from the environment rarely comes back verbatim: a service quotes
 * the request URL it received (percent-encoded, in either case of hex, `\`
 * turned into `/` in an http path, a space as `+` in a form), a JSON body
 * escapes `"` and `\` (and a Python or PHP service escapes `/` or every
 * non-ASCII character as `\uXXXX`), an HTML error page writes `&quot;`. So
 * each character of a secret matches any of those spellings, one character
 * at a time, and a string that mixes them (the WHATWG URL parser encodes `"`
 * but not `\` in a query) is still found. All secrets are one regular
 * expression, longest first, so a secret containing another is replaced whole.
 */
export const REDACTED = '***'

export interface MatcherOptions {
  /**
   * Values shorter than this are not treated as secrets. Default 1 (every
   * non-empty value). The journal uses a higher floor: a port or a short name
   * would match amounts and hex digests (see journal-secrets.ts).
   */
  minLength?: number
}

export class SecretMatcher {
  /** The secrets this matcher looks for, longest first. */
  readonly values: readonly string[]
  private readonly pattern: RegExp | undefined

  constructor(values: Iterable<string>, options: MatcherOptions = {}) {
    const min = Math.max(1, options.minLength ?? 1)
    this.values = [...new Set(values)].filter((v) => typeof v === 'string' && v.length >= min).sort((a, b) => b.length - a.length)
    this.pattern = this.values.length > 0 ? new RegExp(this.values.map(spellings).join('|'), 'g') : undefined
  }

  get empty(): boolean {
    return this.pattern === undefined
  }

  /** The text with every occurrence of every secret, in any spelling, replaced by `marker`. */
  redact(text: string, marker = REDACTED): string {
    if (!this.pattern || text.length === 0) return text
    this.pattern.lastIndex = 0
    return text.replace(this.pattern, marker)
  }

  /** The same for a JSON-able value: strings (keys too) are scrubbed in place, so the result stays valid JSON. */
  redactValue<T>(value: T, marker = REDACTED): T {
    if (!this.pattern) return value
    const walk = (node: unknown): unknown => {
      if (typeof node === 'string') return this.redact(node, marker)
      if (Array.isArray(node)) return node.map(walk)
      if (node !== null && typeof node === 'object') {
        return Object.fromEntries(Object.entries(node).map(([k, v]) => [this.redact(k, marker), walk(v)]))
      }
      return node
    }
    return walk(value) as T
  }

  /** Whether the text holds a secret in any spelling. */
  test(text: string): boolean {
    if (!this.pattern) return false
    this.pattern.lastIndex = 0
    return this.pattern.test(text)
  }

  /**
   * Where in `value` a secret first shows, as a path from `root`
   * (`args.note`, `args.to[2]`), or undefined. Never the secret itself.
   */
  locate(value: unknown, root: string): string | undefined {
    if (!this.pattern) return undefined
    const walk = (node: unknown, path: string): string | undefined => {
      if (typeof node === 'string') return this.test(node) ? path : undefined
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) {
          const found = walk(node[i], `${path}[${i}]`)
          if (found) return found
        }
        return undefined
      }
      if (node !== null && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (this.test(k)) return `${path} (a key)`
          const found = walk(v, `${path}.${k}`)
          if (found) return found
        }
      }
      return undefined
    }
    return walk(value, root)
  }
}

/** One secret as a regular expression: each character in any of its spellings. */
function spellings(secret: string): string {
  return [...secret].map((ch) => `(?:${[...new Set(charSpellings(ch))].join('|')})`).join('')
}

const HTML_NAMED: Record<string, string> = { '"': '&quot;', '&': '&amp;', '<': '&lt;', '>': '&gt;', "'": '&apos;' }
const JSON_SHORT: Record<string, string> = { '"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

function charSpellings(ch: string): string[] {
  const out = [literal(ch), percent(ch), unicodeEscape(ch)]
  const short = JSON_SHORT[ch]
  if (short) out.push(literal(short), percent(short))
  const named = HTML_NAMED[ch]
  if (named) {
    // Named, decimal or hex character reference, as HTML escapers write them.
    const code = ch.charCodeAt(0)
    out.push(literal(named), `&#0*${code};`, `&#[xX]0*${hexDigits(code.toString(16))};`)
  }
  if (ch === ' ') out.push('\\+')
  // The WHATWG URL parser reads `\` as `/` in the path of an http(s) URL.
  if (ch === '\\') out.push('/')
  return out
}

/** Percent-encoding of the character's UTF-8 bytes, hex digits in either case. */
function percent(ch: string): string {
  return [...Buffer.from(ch, 'utf8')].map((b) => `%${hexDigits(b.toString(16).padStart(2, '0'))}`).join('')
}

/** `\uXXXX` (a surrogate pair for characters beyond the BMP), hex digits in either case. */
function unicodeEscape(ch: string): string {
  let out = ''
  for (let i = 0; i < ch.length; i++) out += `\\\\u${hexDigits(ch.charCodeAt(i).toString(16).padStart(4, '0'))}`
  return out
}

function hexDigits(hex: string): string {
  return [...hex].map((d) => (/[a-f]/i.test(d) ? `[${d.toLowerCase()}${d.toUpperCase()}]` : d)).join('')
}

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')
}
