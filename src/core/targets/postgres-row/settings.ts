/**
 * A postgres_row target's settings, checked once at construction and
 * compiled into the statements it runs (STYLE habits 2 and 5: validate at the
 * edge; identifiers validated and quoted, values always parameters).
 *
 * Every problem names its key path (`targets.<name>.<key>`) and all are
 * reported at once, as the config loader does. The URL never appears in a
 * message: it usually carries a password.
 */
import type { PostgresRowTargetConfig } from '../../config/types.js'
import { ConfigError } from '../../errors.js'
import { quoteIdentifier, SQL_IDENTIFIER } from '../../stores/postgres/identifier.js'

export type PostgresRowTargetSettings = Pick<PostgresRowTargetConfig, 'url' | 'table'> &
  Partial<Omit<PostgresRowTargetConfig, 'type' | 'url' | 'table'>>

/** A configured statement and the names its $1..$n are taken from. */
export interface Parameterised {
  sql: string
  params: readonly string[]
}

export interface RowPlan {
  /** The table as configured ("shop.orders"), for receipts and messages. */
  table: string
  /** The same, quoted for SQL (`"shop"."orders"`). */
  quotedTable: string
  /** Schema (when qualified) and table name, unquoted, for catalog look-ups. */
  tableParts: readonly string[]
  effectIdColumn: string
  /** [args key, column], sorted by args key so the INSERT text never depends on config order. */
  columns: readonly (readonly [string, string])[]
  insert: string
  exists: string
  premise?: Parameterised & { locked: string }
  compensate?: Parameterised
  /** Every args key an insert effect may carry: columns, then premise params. */
  allowedArgs: ReadonlySet<string>
  statementTimeoutMs: number
  timeoutMs: number
  connectTimeoutMs: number
}

/** The compensated effect's own id, always available to compensate_params. */
export const EFFECT_ID_PARAM = 'effect_id'

const LOCKING_CLAUSE = /\bfor\s+(update|share|no\s+key\s+update|key\s+share)\b/i

export function compileSettings(name: string, s: PostgresRowTargetSettings): RowPlan {
  const key = (k: string) => `targets.${name}.${k}`
  const problems: string[] = []
  const effectIdColumn = s.effectIdColumn ?? 'effect_id'
  const columns = Object.entries(s.columns ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const premiseParams = s.premiseParams ?? []
  const compensateParams = s.compensateParams ?? []
  const statementTimeoutMs = s.statementTimeoutMs ?? 5_000
  const timeoutMs = s.timeoutMs ?? 10_000
  const connectTimeoutMs = s.connectTimeoutMs ?? 3_000

  if (!isPostgresUrl(s.url)) problems.push(`${key('url')}: must be a postgres:// or postgresql:// URL`)
  const tableParts = s.table.split('.')
  if (tableParts.length > 2 || !tableParts.every((p) => SQL_IDENTIFIER.test(p))) {
    problems.push(`${key('table')}: must be a lower-case table name, optionally schema-qualified (got ${JSON.stringify(s.table)})`)
  }
  if (!SQL_IDENTIFIER.test(effectIdColumn)) problems.push(`${key('effect_id_column')}: must be a lower-case SQL identifier`)

  const seen = new Map<string, string>()
  for (const [arg, column] of columns) {
    if (arg === EFFECT_ID_PARAM) problems.push(`${key('columns')}.${arg}: "${EFFECT_ID_PARAM}" is the effect's own id, not an args key`)
    if (!SQL_IDENTIFIER.test(column)) problems.push(`${key('columns')}.${arg}: ${JSON.stringify(column)} is not a lower-case SQL identifier`)
    if (column === effectIdColumn) problems.push(`${key('columns')}.${arg}: ${column} is the effect id column; Interlock fills it`)
    const other = seen.get(column)
    if (other !== undefined) problems.push(`${key('columns')}.${arg}: column ${column} is already mapped from ${other}`)
    seen.set(column, arg)
  }

  const premiseSql = s.premiseSql === undefined ? undefined : statementText(s.premiseSql)
  if (premiseSql === undefined) {
    if (premiseParams.length > 0) problems.push(`${key('premise_params')}: given without premise_sql`)
  } else {
    if (!/^(select|with)\b/i.test(premiseSql)) problems.push(`${key('premise_sql')}: must be a SELECT (or WITH ... SELECT) query`)
    if (LOCKING_CLAUSE.test(premiseSql)) {
      problems.push(`${key('premise_sql')}: write no locking clause; Interlock appends FOR UPDATE inside the apply transaction and reads without a lock otherwise`)
    }
    problems.push(...placeholderProblems(premiseSql, premiseParams, key('premise_sql'), key('premise_params')))
  }
  if (premiseParams.includes(EFFECT_ID_PARAM)) problems.push(`${key('premise_params')}: "${EFFECT_ID_PARAM}" is not an args key`)

  const allowedArgs = new Set([...columns.map(([arg]) => arg), ...premiseParams])
  const compensateSql = s.compensateSql === undefined ? undefined : statementText(s.compensateSql)
  if (compensateSql === undefined) {
    if (compensateParams.length > 0) problems.push(`${key('compensate_params')}: given without compensate_sql`)
  } else {
    problems.push(...placeholderProblems(compensateSql, compensateParams, key('compensate_sql'), key('compensate_params')))
    for (const p of compensateParams) {
      if (p !== EFFECT_ID_PARAM && !allowedArgs.has(p)) {
        problems.push(`${key('compensate_params')}: ${JSON.stringify(p)} is neither "${EFFECT_ID_PARAM}" nor an args key named in columns or premise_params`)
      }
    }
  }

  if (timeoutMs <= statementTimeoutMs) {
    problems.push(`${key('timeout_ms')}: must be above statement_timeout_ms (${statementTimeoutMs}) so PostgreSQL's own, definite timeout answers first`)
  }

  if (problems.length > 0) {
    throw new ConfigError(`target ${name}: invalid postgres_row settings`, problems, {
      hint: 'Fix the keys listed; each is described in interlock.toml.example.',
    })
  }

  const quotedTable = tableParts.map(quoteIdentifier).join('.')
  const idColumn = quoteIdentifier(effectIdColumn)
  const insertColumns = [idColumn, ...columns.map(([, c]) => quoteIdentifier(c))]
  const plan: RowPlan = {
    table: s.table,
    quotedTable,
    tableParts,
    effectIdColumn,
    columns,
    // RETURNING tells this call whether it wrote the row or found it there (a repeated apply).
    insert:
      `INSERT INTO ${quotedTable} (${insertColumns.join(', ')}) VALUES (${insertColumns.map((_, i) => `$${i + 1}`).join(', ')}) ` +
      `ON CONFLICT (${idColumn}) DO NOTHING RETURNING 1`,
    exists: `SELECT 1 FROM ${quotedTable} WHERE ${idColumn} = $1`,
    allowedArgs,
    statementTimeoutMs,
    timeoutMs,
    connectTimeoutMs,
  }
  if (premiseSql !== undefined) plan.premise = { sql: premiseSql, locked: `${premiseSql}\nFOR UPDATE`, params: premiseParams }
  if (compensateSql !== undefined) plan.compensate = { sql: compensateSql, params: compensateParams }
  return plan
}

/** Trimmed, without one trailing semicolon (FOR UPDATE is appended after it). */
function statementText(sql: string): string {
  return sql.trim().replace(/;\s*$/, '').trimEnd()
}

/**
 * $1..$n must match the params list exactly: a gap or an extra placeholder
 * would only show at the first dispatch, as a PostgreSQL error.
 */
function placeholderProblems(sql: string, params: readonly string[], sqlKey: string, paramsKey: string): string[] {
  const used = new Set([...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))
  const highest = Math.max(0, ...used)
  const problems: string[] = []
  if (highest !== params.length) {
    problems.push(`${paramsKey}: ${sqlKey.split('.').pop()} uses ${highest === 0 ? 'no placeholders' : `$1..$${highest}`} but ${params.length} name(s) are given`)
  }
  for (let i = 1; i < highest; i++) if (!used.has(i)) problems.push(`${sqlKey}: $${i} is never used (placeholders must be $1..$n without gaps)`)
  return problems
}

function isPostgresUrl(url: string): boolean {
  try {
    const u = new URL(url)
    return u.protocol === 'postgres:' || u.protocol === 'postgresql:'
  } catch {
    return false
  }
}
