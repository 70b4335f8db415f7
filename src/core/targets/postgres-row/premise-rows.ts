/**
 * Premise rows: what premise_sql returned when the agent decided, as stable
 * JSON, and the words for what changed since.
 *
 *   premises = { "rows": [ { "status": "open", "balance": "100.00" }, ... ] }
 *
 * Stable means the same database state reads as the same JSON in any process
 * on any day: values keep PostgreSQL's own text form (NUMERIC "100.00" with its
 * scale, INT8 and floats as strings, timestamps in ISO form under the session's
 * pinned UTC time zone, see connection.ts), except int2/int4, booleans and
 * json/jsonb, which map onto JSON exactly. Rows are compared in the order the
 * query returns them, so a query that can return several rows needs an ORDER BY.
 */
import type pg from 'pg'
import { canonicalJson, type JsonObject, type JsonValue } from '../../canonical-json.js'
import { TargetError } from '../../errors.js'

const INT2 = 21
const INT4 = 23
const OID = 26
const BOOL = 16
const JSON_OID = 114
const JSONB = 3802

const asText = (text: string): string => text

function parserOf(oid: number): (text: string) => JsonValue {
  if (oid === INT2 || oid === INT4 || oid === OID) return Number
  if (oid === BOOL) return (text) => text === 't'
  if (oid === JSON_OID || oid === JSONB) return (text) => JSON.parse(text) as JsonValue
  return asText
}

/** pg's per-query `types`: this module's parsers instead of pg's (which turn timestamps into lossy Dates). */
export const stableTypes = { getTypeParser: parserOf } as unknown as pg.CustomTypesConfig

interface ArrayResult {
  fields: { name: string }[]
  rows: unknown[][]
}

/** Rows as objects; refuses two columns of one name, which an object would silently merge. */
export function rowsOf(target: string, result: ArrayResult): JsonObject[] {
  const names = result.fields.map((f) => f.name)
  const twice = names.find((n, i) => names.indexOf(n) !== i)
  if (twice !== undefined) {
    throw new TargetError(`target ${target}: premise_sql returns two columns named ${twice}`, {
      hint: 'Give each selected column its own name with AS.',
    })
  }
  return result.rows.map((row) => Object.fromEntries(names.map((n, i) => [n, (row[i] ?? null) as JsonValue])))
}

/** The captured rows, or a violation when the premises do not hold rows as capture writes them. */
export function capturedRows(premises: JsonObject): { rows?: JsonObject[]; problem?: string } {
  const rows = premises.rows
  if (rows === undefined) return {}
  if (!Array.isArray(rows) || !rows.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r))) {
    return { problem: 'premises.rows must be the list of row objects capture returned' }
  }
  return { rows: rows as JsonObject[] }
}

/** One line per changed value, naming row and column; [] when the rows are the same. */
export function describeChanges(was: readonly JsonObject[], now: readonly JsonObject[]): string[] {
  const out: string[] = []
  if (was.length !== now.length) {
    out.push(`premise_sql now returns ${now.length} row(s); it returned ${was.length} when the agent decided`)
  }
  for (let i = 0; i < Math.min(was.length, now.length); i++) {
    const a = was[i]!
    const b = now[i]!
    const columns = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()
    for (const c of columns) {
      if (!Object.hasOwn(b, c)) out.push(`row ${i + 1}: column ${c} is no longer returned`)
      else if (!Object.hasOwn(a, c)) out.push(`row ${i + 1}: column ${c} was not returned when the agent decided`)
      else if (canonicalJson(a[c]!) !== canonicalJson(b[c]!)) out.push(`row ${i + 1} ${c}: was ${shown(a[c]!)}, now ${shown(b[c]!)}`)
    }
  }
  return out
}

function shown(v: JsonValue): string {
  const s = canonicalJson(v)
  return s.length > 120 ? `${s.slice(0, 117)}...` : s
}
