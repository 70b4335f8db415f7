/**
 * Rows in a PostgreSQL table as a tier-2 effect target (docs/design.md,
 * "Targets and tiers").
 *
 * apply (action "insert"), in one transaction: premise_sql re-run with FOR
 * UPDATE appended and compared with the captured rows (a change → rollback
 * and a 'premise' fault naming the changed values), then
 * `INSERT ... ON CONFLICT (effect_id) DO NOTHING`, then COMMIT. The premise is
 * pushed down: check and effect are one atomic step. Recovery's re-apply
 * checks it too, unlike the repo target: a transaction leaves no half-made
 * effect behind for the check to trip over.
 * query: `SELECT 1 ... WHERE effect_id = $1`.
 * capture / validatePremises: premise_sql read without a lock, in a READ ONLY
 * transaction (premise-rows.ts for the format). An effect submitted without
 * captured rows is inserted without a premise check. FOR UPDATE locks the
 * rows the premise returned: a premise that rows are absent is not protected
 * from a concurrent INSERT (a unique constraint is what protects that).
 * compensation: action "compensate" runs compensate_sql. Its effect leaves no
 * row carrying its id, so query cannot find it and recovery runs it again:
 * compensate_sql must be idempotent (a DELETE by effect id is).
 *
 * Faults by phase (faults.ts); the table is checked at first use
 * (readiness.ts). The URL never appears in a message, receipt or journal.
 */
import type pg from 'pg'
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault, InputError, InterlockError, TargetError } from '../../errors.js'
import { redact } from '../../config/redact.js'
import type { ApplyContext, Compensation, EffectTarget, ProbeResult } from '../target.js'
import { checkArgs, compensationArgs, parseRowAction, type RowAction } from './args.js'
import { createRowPool, describeTarget, urlSecrets } from './connection.js'
import { describePgError, faultOf, type Phase } from './faults.js'
import { insertRow, readPremiseRows, rowExists, runCompensation } from './operations.js'
import { capturedRows, describeChanges } from './premise-rows.js'
import { checkReadiness } from './readiness.js'
import { probePostgresRow } from './probe.js'
import { compileSettings, type PostgresRowTargetSettings, type RowPlan } from './settings.js'
import { fencedOut, type Fence } from '../fence.js'

export interface PostgresRowTargetOptions {
  /** More values to keep out of errors (config `secrets`). */
  secrets?: readonly string[]
}

export class PostgresRowTarget implements EffectTarget {
  readonly tier = 2 as const
  readonly compensation?: (effect: Effect, receipt: Receipt) => Compensation
  readonly notCompensable?: string
  readonly where: string
  private readonly plan: RowPlan
  private readonly url: string
  private readonly secrets: string[]
  private pool?: Promise<pg.Pool>
  private readiness?: Promise<pg.Pool>

  constructor(
    readonly name: string,
    settings: PostgresRowTargetSettings,
    options: PostgresRowTargetOptions = {},
  ) {
    this.plan = compileSettings(name, settings)
    this.url = settings.url
    this.where = describeTarget(name, settings.url, this.plan.table)
    this.secrets = [...urlSecrets(settings.url), ...(options.secrets ?? [])]
    if (this.plan.compensate) {
      const params = this.plan.compensate.params
      this.compensation = (effect) => ({ action: 'compensate', args: compensationArgs(name, params, effect.id, effect.args) })
    } else {
      this.notCompensable = `target ${name} has no compensate_sql, so its rows cannot be taken back through Interlock`
    }
  }

  validateArgs(action: string, args: JsonObject): void {
    checkArgs(this.name, this.plan, parseRowAction(this.name, action), args)
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    this.validateArgs(action, args)
    if (action !== 'insert' || !this.plan.premise) return {}
    return { rows: await this.readPremise(args) }
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    try {
      this.validateArgs(effect.action, effect.args)
    } catch (e) {
      // Journaled by a caller that skipped validateArgs: it can never be applied, so say why before anything is sent.
      if (e instanceof InputError) return [e.message]
      throw e
    }
    // First use checks the table, so a misconfigured target stops the effect before DISPATCHED.
    await this.readyToRead('cannot check the premises now')
    const { rows, problem } = capturedRows(effect.premises)
    if (problem) return [problem]
    if (rows === undefined || effect.action !== 'insert') return []
    if (!this.plan.premise) return [`premises carry rows, but target ${this.name} has no premise_sql to check them against`]
    return describeChanges(rows, await this.readPremise(effect.args))
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let action: RowAction
    try {
      action = parseRowAction(this.name, effect.action)
      checkArgs(this.name, this.plan, action, effect.args)
    } catch (e) {
      throw new DispatchFault('refused', `${this.where}: ${(e as Error).message}; nothing was sent`, { cause: e })
    }
    let pool: pg.Pool
    try {
      pool = await this.ready()
    } catch (e) {
      if (e instanceof InterlockError) throw new DispatchFault('refused', `${e.message}; nothing was sent`, { hint: e.hint, cause: e })
      throw faultOf(e, 'connect', this.where, this.secrets)
    }
    return this.inTransaction(
      pool,
      async (client) => {
        if (action === 'compensate') return { receipt: await runCompensation(client, this.plan, effect) }
        return insertRow(client, this.name, this.plan, effect)
      },
      ctx.fence,
    )
  }

  async query(effect: Effect): Promise<Receipt | null> {
    // A compensation leaves no row with its own id: "not found" makes recovery run the idempotent compensate_sql again.
    if (parseRowAction(this.name, effect.action) === 'compensate') return null
    const pool = await this.readyToRead('cannot ask whether the effect happened')
    const found = await this.withClient(pool, (client) => rowExists(client, this.plan, effect.id), 'cannot ask whether the effect happened')
    return found ? { table: this.plan.table, effect_id: effect.id, found: true } : null
  }

  /** `interlock check`: the first-use check in a rolled-back READ ONLY transaction, on a pool of its own (probe.ts). */
  probe(): Promise<ProbeResult> {
    return probePostgresRow(this.name, this.url, this.where, this.plan, this.secrets)
  }

  async close(): Promise<void> {
    const pool = this.pool
    this.pool = undefined
    this.readiness = undefined
    if (pool) await (await pool.catch(() => undefined))?.end()
  }

  /** BEGIN, the work, then COMMIT, or ROLLBACK and a 'premise' fault; every failure sorted by phase. */
  private async inTransaction(
    pool: pg.Pool,
    work: (client: pg.PoolClient) => Promise<{ receipt: Receipt } | { violations: string[] }>,
    fence?: Fence,
  ): Promise<Receipt> {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (e) {
      throw faultOf(e, 'connect', this.where, this.secrets)
    }
    let phase: Phase = 'transaction'
    let reusable = false
    try {
      await client.query('BEGIN')
      const outcome = await work(client)
      if ('violations' in outcome) {
        await client.query('ROLLBACK')
        reusable = true
        throw new DispatchFault('premise', `${this.where}: premises changed since the decision: ${outcome.violations.join('; ')}`, {
          context: { violations: outcome.violations },
        })
      }
      if (fence && !fence()) {
        // A relay that lost its lease rolls back instead of committing (the unique effect id would refuse a second row anyway).
        await client.query('ROLLBACK')
        reusable = true
        throw fencedOut(this.where)
      }
      phase = 'commit'
      await client.query('COMMIT')
      reusable = true
      return outcome.receipt
    } catch (e) {
      throw faultOf(e, phase, this.where, this.secrets)
    } finally {
      // A connection that failed mid-transaction may still be busy or half-open: never hand it to the next caller.
      client.release(reusable ? undefined : true)
    }
  }

  private async readPremise(args: JsonObject): Promise<JsonObject[]> {
    const pool = await this.readyToRead('cannot read the premises now')
    return this.withClient(
      pool,
      async (client) => {
        await client.query('BEGIN READ ONLY')
        const rows = await readPremiseRows(client, this.name, this.plan, args, false)
        await client.query('COMMIT')
        return rows
      },
      'cannot read the premises now',
    )
  }

  /** One connection for a read; any failure is a TargetError ("cannot tell now" must not read as "no" or "changed"). */
  private async withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, what: string): Promise<T> {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (e) {
      throw this.unreachable(e, what)
    }
    let ok = false
    try {
      const result = await work(client)
      ok = true
      return result
    } catch (e) {
      throw this.unreachable(e, what)
    } finally {
      client.release(ok ? undefined : true)
    }
  }

  private async readyToRead(what: string): Promise<pg.Pool> {
    try {
      return await this.ready()
    } catch (e) {
      throw this.unreachable(e, what)
    }
  }

  private unreachable(e: unknown, what: string): InterlockError {
    if (e instanceof InterlockError) return e
    return new TargetError(`${this.where}: ${what}: ${redact(describePgError(e), this.secrets)}`, { cause: e })
  }

  /** The pool, once the table has passed its first-use check; a failed check is tried again next time. */
  private ready(): Promise<pg.Pool> {
    if (!this.readiness) {
      const attempt = (async () => {
        this.pool ??= createRowPool(this.name, this.url, this.plan)
        const pool = await this.pool
        const client = await pool.connect()
        try {
          await checkReadiness(client, this.where, this.plan)
        } catch (e) {
          client.release(true)
          throw e
        }
        client.release()
        return pool
      })()
      this.readiness = attempt
      attempt.catch(() => {
        if (this.readiness === attempt) this.readiness = undefined
      })
    }
    return this.readiness
  }
}
