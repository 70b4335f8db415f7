/**
 * The statements a postgres_row target runs, each a small function handed
 * its connection (the caller owns BEGIN/COMMIT and the connection's fate).
 *
 * Configured SQL always goes through the extended protocol, even without
 * parameters: it accepts exactly one statement, so text appended to a
 * configured query can never run as a second one.
 */
import type pg from 'pg'
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Receipt } from '../../effect.js'
import { insertParams, namedParams } from './args.js'
import { capturedRows, describeChanges, rowsOf, stableTypes } from './premise-rows.js'
import type { RowPlan } from './settings.js'

export function extended(text: string, values: unknown[]): pg.QueryConfig {
  return { text, values, queryMode: 'extended' } as pg.QueryConfig
}

/** premise_sql's rows as stable JSON; `lock` appends FOR UPDATE (inside apply's transaction only). */
export async function readPremiseRows(client: pg.ClientBase, target: string, plan: RowPlan, args: JsonObject, lock: boolean): Promise<JsonObject[]> {
  const premise = plan.premise!
  const res = await client.query({
    ...extended(lock ? premise.locked : premise.sql, namedParams(premise.params, args)),
    rowMode: 'array',
    types: stableTypes,
  } as pg.QueryArrayConfig)
  return rowsOf(target, res)
}

export async function rowExists(client: pg.ClientBase, plan: RowPlan, effectId: string): Promise<boolean> {
  const res = await client.query(plan.exists, [effectId])
  return (res.rowCount ?? 0) > 0
}

export type InsertOutcome = { receipt: Receipt } | { violations: string[] }

/**
 * Inside an open transaction: the premise re-read under FOR UPDATE and
 * compared, then the INSERT. The locks hold until the caller's COMMIT, so no
 * other transaction can change a premise row between the check and the row.
 */
export async function insertRow(client: pg.ClientBase, target: string, plan: RowPlan, effect: Effect): Promise<InsertOutcome> {
  const { rows: was, problem } = capturedRows(effect.premises)
  if (problem) return { violations: [problem] }
  if (was !== undefined) {
    if (!plan.premise) return { violations: [`premises carry rows, but target ${target} has no premise_sql to check them against`] }
    const changes = describeChanges(was, await readPremiseRows(client, target, plan, effect.args, true))
    // A repeated apply of an effect that already landed is no premise failure: the world may have moved because of it.
    if (changes.length > 0) {
      return (await rowExists(client, plan, effect.id)) ? { receipt: rowReceipt(plan, effect.id, false) } : { violations: changes }
    }
  }
  const res = await client.query(plan.insert, insertParams(plan, effect.id, effect.args))
  return { receipt: rowReceipt(plan, effect.id, res.rowCount === 1) }
}

/** compensate_sql with its parameters from the compensation's args; the receipt counts the rows it touched. */
export async function runCompensation(client: pg.ClientBase, plan: RowPlan, effect: Effect): Promise<Receipt> {
  const compensate = plan.compensate!
  const res = await client.query(extended(compensate.sql, namedParams(compensate.params, effect.args)))
  return { table: plan.table, effect_id: effect.id, rows_affected: res.rowCount ?? 0 }
}

/** `inserted`: whether this call wrote the row (false: a repeated apply found it already there). */
export function rowReceipt(plan: RowPlan, effectId: string, inserted: boolean): Receipt {
  return { table: plan.table, effect_id: effectId, inserted }
}
