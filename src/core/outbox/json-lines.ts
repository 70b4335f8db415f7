/**
 * JSON Lines in and out, split on "\n" alone.
 *
 * JSON strings may hold U+2028 and U+2029 raw, and node:readline (since
 * Node.js 22) ends a line at each of them, cutting a record in two. So lines
 * are written with both escaped (`\u2028`, `\u2029`: the same JSON value,
 * and safe for any reader), and read by splitting on "\n" only, so files
 * written before the escaping, or by other tools, read whole too.
 */
import { StringDecoder } from 'node:string_decoder'

const SEPARATORS = /[\u2028\u2029]/g

/** One value as one line's text: JSON with the line and paragraph separators escaped. */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(SEPARATORS, (c) => (c === '\u2028' ? '\\u2028' : '\\u2029'))
}

/** The lines of a byte stream (UTF-8), without their "\n" (and a "\r" before it). */
export async function* lines(input: AsyncIterable<Buffer | string>): AsyncIterable<string> {
  const decoder = new StringDecoder('utf8')
  let pending = ''
  for await (const chunk of input) {
    pending += typeof chunk === 'string' ? chunk : decoder.write(chunk)
    let at = pending.indexOf('\n')
    while (at >= 0) {
      yield trimCr(pending.slice(0, at))
      pending = pending.slice(at + 1)
      at = pending.indexOf('\n')
    }
  }
  pending += decoder.end()
  if (pending !== '') yield trimCr(pending)
}

function trimCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line
}
