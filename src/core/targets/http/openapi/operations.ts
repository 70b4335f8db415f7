/**
 * The operations of an OpenAPI document: every method under every path,
 * which of them change something (an effect) and which only read, and
 * finding the one a user names, by operationId or as "METHOD /path", with
 * "did you mean" when none matches.
 */
import { editDistance } from '../../../edit-distance.js'
import { NotFoundError, UsageError } from '../../../errors.js'
import type { JsonTable, OpenApiDocument } from './document.js'
import { derefTable, isTable } from './refs.js'

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const
/**
 * Safe methods (RFC 9110 §9.2.1) only read. The http target sends an effect
 * with POST, PUT, PATCH or DELETE, which is exactly the rest.
 */
const READS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE'])

export interface Operation {
  /** The operationId, or undefined when the document gives none. */
  operationId?: string
  method: string
  path: string
  summary: string
  /** The path item (its parameters and servers apply to each of its operations). */
  pathItem: JsonTable
  operation: JsonTable
}

/** What `--list` shows of an operation. */
export interface OperationRow {
  operationId: string | null
  method: string
  path: string
  summary: string
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const paths = isTable(doc.root.paths) ? doc.root.paths : {}
  const out: Operation[] = []
  for (const [path, raw] of Object.entries(paths)) {
    const item = derefTable(doc.root, raw)
    if (!item) continue
    for (const m of METHODS) {
      const op = item[m]
      if (!isTable(op)) continue
      const summary = typeof op.summary === 'string' ? op.summary : typeof op.description === 'string' ? op.description.split('\n')[0]! : ''
      out.push({ ...(typeof op.operationId === 'string' ? { operationId: op.operationId } : {}), method: m.toUpperCase(), path, summary: oneLine(summary), pathItem: item, operation: op })
    }
  }
  return out
}

export function isRead(method: string): boolean {
  return READS.has(method.toUpperCase())
}

/** The operations that change something, for `--list`. */
export function effectOperations(doc: OpenApiDocument): OperationRow[] {
  return operationsOf(doc)
    .filter((o) => !isRead(o.method))
    .map((o) => ({ operationId: o.operationId ?? null, method: o.method, path: o.path, summary: o.summary }))
}

/** How an operation is named in messages: its operationId, else "METHOD /path". */
export function operationName(o: Pick<Operation, 'operationId' | 'method' | 'path'>): string {
  return o.operationId ?? `${o.method} ${o.path}`
}

/**
 * The operation named `wanted`: an operationId, or "METHOD /path" for one
 * the document gives no id. A read is refused: it is no effect.
 */
export function findOperation(doc: OpenApiDocument, wanted: string): Operation {
  const all = operationsOf(doc)
  const byPath = /^([A-Za-z]+)\s+(\/\S*)$/.exec(wanted.trim())
  const found =
    all.find((o) => o.operationId === wanted) ??
    (byPath ? all.find((o) => o.method === byPath[1]!.toUpperCase() && o.path === byPath[2]) : undefined) ??
    all.find((o) => o.operationId !== undefined && o.operationId.toLowerCase() === wanted.toLowerCase())
  if (!found) {
    const near = suggestions(wanted, all)
    throw new NotFoundError(`${doc.name} has no operation ${JSON.stringify(wanted)}${near.length > 0 ? `; did you mean ${near.map((n) => JSON.stringify(n)).join(', ')}?` : ''}`, {
      hint: `List the operations that change something with: interlock targets from-openapi ${doc.name} --list`,
      context: { file: doc.file, operation: wanted, ...(near.length > 0 ? { suggestions: near } : {}) },
    })
  }
  if (isRead(found.method)) {
    throw new UsageError(`operation ${operationName(found)} is ${found.method} ${found.path}: a read, not an effect; Interlock journals calls that change something`, {
      hint: `Pick an operation that writes (POST, PUT, PATCH or DELETE): interlock targets from-openapi ${doc.name} --list. A read a decision rests on can be declared as a premise (rests_on) of the write.`,
      context: { file: doc.file, operation: operationName(found), method: found.method },
    })
  }
  return found
}

/**
 * Writes only (a read is refused anyway): the closest operationIds by edit
 * distance, then those holding every word typed (`create-issue` finds
 * `issues/create`), fewest other words first.
 */
function suggestions(wanted: string, all: Operation[]): string[] {
  const ids = all.filter((o) => o.operationId !== undefined && !isRead(o.method)).map((o) => o.operationId!)
  const w = wanted.toLowerCase()
  const tolerance = Math.max(2, Math.floor(w.length / 3))
  const close = ids
    .map((id) => ({ id, d: editDistance(w, id.toLowerCase()) }))
    .filter((o) => o.d <= tolerance)
    .sort((a, b) => a.d - b.d)
    .map((o) => o.id)
  const typed = wordsOf(wanted)
  const holding =
    typed.length === 0
      ? []
      : ids
          .map((id) => ({ id, words: wordsOf(id) }))
          .filter((o) => typed.every((t) => o.words.includes(t)))
          .sort((a, b) => a.words.length - b.words.length)
          .map((o) => o.id)
  return [...new Set([...close, ...holding])].slice(0, 5)
}

/** Lower-case words of an operationId, a plural's s dropped (issues → issue, createIssue → create, issue). */
function wordsOf(id: string): string[] {
  return id
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .map((w) => (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w))
}

/** A summary as one comment-safe line: whitespace collapsed, control characters gone. */
export function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim()
}
