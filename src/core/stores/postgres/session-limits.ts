/**
 * Limits on the store's own connections, so that a relay (or any command)
 * never waits without bound on the database: docs/dbas.md, "Limits on the
 * store's connections", has the defaults and why.
 *
 * - lock_timeout: Interlock's statements hold row locks for milliseconds; a
 *   wait longer than that is a foreign lock (an upgrade's ACCESS EXCLUSIVE, a
 *   long manual transaction). The statement fails (55P03, transient), the
 *   caller retries with back-off, and its waiting request no longer sits in
 *   the lock queue.
 * - statement_timeout: anything else slow (a bad plan, starved I/O) ends as
 *   a definite, rolled-back error (57014) rather than a call that hangs.
 * - idle_in_transaction_session_timeout: a process stopped between the
 *   statements of a transaction (SIGSTOP, a debugger) loses its connection
 *   and the row locks with it, before its leases could run out, instead of
 *   blocking every other relay's writes to those rows.
 *
 * Sent as SET on each new connection rather than as startup parameters:
 * PgBouncer refuses startup parameters it does not know ("unsupported startup
 * parameter"), and SET goes through it. 0 sets nothing, so a DBA's `ALTER
 * ROLE … SET` stays in force.
 */
export interface PgSessionLimits {
  statementTimeoutMs?: number
  lockTimeoutMs?: number
  idleInTransactionTimeoutMs?: number
}

/** The SET statements for these limits (one simple query), or undefined when none is set. */
export function sessionLimitsSql(limits: PgSessionLimits | undefined): string | undefined {
  if (!limits) return undefined
  const sets: string[] = []
  const add = (name: string, ms: number | undefined) => {
    // Whole milliseconds only: the number is written into the statement.
    if (ms !== undefined && Number.isSafeInteger(ms) && ms > 0) sets.push(`SET ${name} = ${ms}`)
  }
  add('statement_timeout', limits.statementTimeoutMs)
  add('lock_timeout', limits.lockTimeoutMs)
  add('idle_in_transaction_session_timeout', limits.idleInTransactionTimeoutMs)
  return sets.length > 0 ? `${sets.join('; ')};` : undefined
}
