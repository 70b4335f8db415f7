/**
 * `interlock check`'s read-only probe of a postgres_row target: connect, then
 * run the first-use check (readiness.ts: table, columns, privileges, the
 * unique constraint on the effect id column, premise_sql and compensate_sql
 * planned, never run) inside a READ ONLY transaction that is rolled back.
 * EXPLAIN without ANALYZE plans a statement without executing it, so even
 * compensate_sql's DELETE changes nothing.
 *
 * A missing unique constraint is reported on the tier: without it ON CONFLICT
 * cannot make a repeated apply insert nothing, so tier 2 cannot be honoured
 * (it would allow duplicates).
 */
import type pg from 'pg'
import { redact } from '../../config/redact.js'
import { InterlockError, TargetError } from '../../errors.js'
import type { ProbeResult } from '../target.js'
import { createRowPool } from './connection.js'
import { describePgError } from './faults.js'
import { checkReadiness, UNIQUE_EFFECT_ID } from './readiness.js'
import type { RowPlan } from './settings.js'

export async function probePostgresRow(name: string, url: string, where: string, plan: RowPlan, secrets: readonly string[]): Promise<ProbeResult> {
  const pool = await createRowPool(name, url, plan)
  let client: pg.PoolClient | undefined
  try {
    try {
      client = await pool.connect()
      await client.query('BEGIN READ ONLY')
    } catch (e) {
      throw new TargetError(`${where}: cannot connect: ${redact(describePgError(e), [...secrets])}`, { cause: e })
    }
    try {
      await checkReadiness(client, where, plan)
    } catch (e) {
      if (!(e instanceof InterlockError)) throw new TargetError(`${where}: ${redact(describePgError(e), [...secrets])}`, { cause: e })
      if (e.context.check === UNIQUE_EFFECT_ID) {
        return { ok: true, detail: `table ${plan.table} and its columns are there`, tier: { ok: false, detail: e.message, fix: e.hint } }
      }
      return { ok: false, detail: e.message, fix: e.hint }
    }
    return {
      ok: true,
      detail: `table ${plan.table}: columns ${[plan.effectIdColumn, ...plan.columns.map(([, c]) => c)].join(', ')} present, SELECT and INSERT granted`,
      tier: { ok: true, detail: `unique constraint on ${plan.effectIdColumn}: a repeated apply inserts nothing` },
    }
  } finally {
    await client?.query('ROLLBACK').catch(() => {})
    client?.release(true)
    await pool.end().catch(() => {})
  }
}
