/**
 * The first-use check of a postgres_row target against its database: the
 * table exists, has the effect id column and every mapped column, the user
 * may SELECT and INSERT, and the effect id column has a unique constraint of
 * its own (non-partial, not deferrable: what ON CONFLICT (effect_id) can use
 * as its arbiter; without one the INSERT would fail on every effect, or worse,
 * a later change could let duplicates in). premise_sql is planned with FOR
 * UPDATE appended, which refuses queries that cannot lock (aggregates,
 * DISTINCT, GROUP BY, UNION, the nullable side of an outer join) and queries
 * that write; compensate_sql is planned too.
 *
 * It runs at first use, not at registration (createTarget is synchronous and
 * must not need the database up). The gate's first call is validatePremises,
 * so a table that fails the check stops an effect before DISPATCHED.
 *
 * A check that fails on the configuration throws TargetError; a database that
 * cannot be reached throws the driver's error unchanged, for the caller to
 * classify.
 */
import type pg from 'pg'
import { TargetError } from '../../errors.js'
import { sqlStateOf, describePgError } from './faults.js'
import { extended } from './operations.js'
import type { Parameterised, RowPlan } from './settings.js'

interface TableRow {
  oid: number
  relkind: string
  can_insert: boolean
  can_select: boolean
}

export async function checkReadiness(client: pg.ClientBase, where: string, plan: RowPlan): Promise<void> {
  const found = await client.query<TableRow>(
    `SELECT c.oid::int4 AS oid, c.relkind::text AS relkind,
            has_table_privilege(c.oid, 'INSERT') AS can_insert, has_table_privilege(c.oid, 'SELECT') AS can_select
       FROM pg_class c WHERE c.oid = to_regclass($1)`,
    [plan.quotedTable],
  )
  const table = found.rows[0]
  if (!table) throw problem(where, `table ${plan.table} does not exist (or is not visible to the target's user)`, 'Create it, or fix table in the target config.')
  if (table.relkind !== 'r' && table.relkind !== 'p') throw problem(where, `${plan.table} is not a table`)

  const attrs = await client.query<{ attname: string; attnum: number }>(
    'SELECT attname::text AS attname, attnum::int4 AS attnum FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped',
    [table.oid],
  )
  const attnum = new Map(attrs.rows.map((a) => [a.attname, a.attnum]))
  const missing = [plan.effectIdColumn, ...plan.columns.map(([, c]) => c)].filter((c) => !attnum.has(c))
  if (missing.length > 0) throw problem(where, `table ${plan.table} has no column ${missing.join(', ')}`, 'Add the column, or fix effect_id_column / columns in the target config.')

  const unique = await client.query(
    `SELECT 1 FROM pg_index i
      WHERE i.indrelid = $1 AND i.indisunique AND i.indimmediate AND i.indisvalid
        AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indnkeyatts = 1 AND i.indkey[0] = $2`,
    [table.oid, attnum.get(plan.effectIdColumn)],
  )
  if (unique.rowCount === 0) {
    throw problem(
      where,
      `table ${plan.table} has no unique constraint on ${plan.effectIdColumn} alone; INSERT ... ON CONFLICT (${plan.effectIdColumn}) needs one to make a repeated apply insert nothing`,
      `Add one: ALTER TABLE ${plan.quotedTable} ADD UNIQUE ("${plan.effectIdColumn}"); (not deferrable, not partial)`,
      // `interlock check` reports this one as the tier the target cannot honour, not as an unreachable table.
      { check: UNIQUE_EFFECT_ID },
    )
  }
  if (!table.can_insert || !table.can_select) {
    const lacking = [table.can_select ? '' : 'SELECT', table.can_insert ? '' : 'INSERT'].filter(Boolean).join(' and ')
    throw problem(where, `the target's database user lacks ${lacking} on ${plan.table}`, `GRANT ${lacking} ON ${plan.quotedTable} TO <the user in url>;`)
  }

  if (plan.premise) {
    const tree = await explain(client, where, 'premise_sql', { sql: plan.premise.locked, params: plan.premise.params })
    if (writes(tree)) throw problem(where, 'premise_sql writes; it must only read', 'Make premise_sql a plain SELECT.')
  }
  if (plan.compensate && /^(insert|update|delete|merge|select|with)\b/i.test(plan.compensate.sql)) {
    await explain(client, where, 'compensate_sql', plan.compensate)
  }
}

/** Plans (never runs) the statement, parameters all NULL: errors in it show now, not at the first dispatch. */
async function explain(client: pg.ClientBase, where: string, key: string, stmt: Parameterised): Promise<unknown> {
  try {
    const res = await client.query<{ 'QUERY PLAN': unknown }>(extended(`EXPLAIN (FORMAT JSON) ${stmt.sql}`, stmt.params.map(() => null)))
    return res.rows[0]?.['QUERY PLAN']
  } catch (e) {
    const state = sqlStateOf(e)
    // Only the statement's own faults are configuration problems; a dropped connection is the caller's to classify.
    if (state && (state.startsWith('42') || state.startsWith('0A') || state.startsWith('22'))) {
      throw problem(where, `${key} cannot be used: ${describePgError(e)}`, key === 'premise_sql'
        ? 'premise_sql runs with FOR UPDATE appended: it must be a SELECT whose rows can be locked (no aggregates, DISTINCT, GROUP BY, UNION or outer-joined nullable side).'
        : 'Check compensate_sql against the database.')
    }
    throw e
  }
}

function writes(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(writes)
  if (node === null || typeof node !== 'object') return false
  const n = node as Record<string, unknown>
  if (n['Node Type'] === 'ModifyTable') return true
  return Object.values(n).some((v) => typeof v === 'object' && writes(v))
}

/** The context `check` of the failure "no unique constraint on the effect id column". */
export const UNIQUE_EFFECT_ID = 'effect-id-unique'

function problem(where: string, message: string, hint?: string, context?: Record<string, unknown>): TargetError {
  return new TargetError(`${where}: ${message}`, { hint, context })
}
