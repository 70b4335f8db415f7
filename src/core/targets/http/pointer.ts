/**
 * JSON Pointers (RFC 6901): "/sid", "/data/issueCreate/issue/id",
 * "/issues/0/key". Where an answer's receipt is, what a query found, which
 * fields of a premise read matter. "" is the whole document.
 */
import type { JsonValue } from '../../canonical-json.js'

/** The reference tokens of a pointer, unescaped; null when it is not one (RFC 6901 §3: "" or "/..."; "~" only as ~0 or ~1). */
export function parsePointer(pointer: string): string[] | null {
  if (pointer === '') return []
  if (!pointer.startsWith('/')) return null
  const tokens = pointer.slice(1).split('/')
  if (tokens.some((t) => /~(?![01])/.test(t))) return null
  return tokens.map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** What a pointer can be wrong by, for a config problem; undefined when it parses. */
export function pointerProblem(pointer: string): string | undefined {
  if (parsePointer(pointer) !== null) return undefined
  return pointer.startsWith('/')
    ? `"${pointer}" is not a JSON pointer: "~" must be written ~0, and "/" inside a name ~1 (RFC 6901)`
    : `"${pointer}" is not a JSON pointer: it starts with "/", e.g. "/id" or "/data/issue/id" (RFC 6901)`
}

/** The value at `pointer` in `doc`, or undefined when there is none (an array index is a number without leading zeros). */
export function valueAt(doc: JsonValue | undefined, pointer: string): JsonValue | undefined {
  const tokens = parsePointer(pointer)
  if (tokens === null) return undefined
  let node: JsonValue | undefined = doc
  for (const t of tokens) {
    if (Array.isArray(node)) node = /^(0|[1-9]\d*)$/.test(t) ? node[Number(t)] : undefined
    else if (node !== null && typeof node === 'object') node = Object.prototype.hasOwnProperty.call(node, t) ? node[t] : undefined
    else return undefined
  }
  return node
}
