/**
 * Driver errors → Interlock errors, sorted by SQLSTATE class (as dbos-transact
 * does): what matters to the gate is whether the failure is the database
 * being unreachable or unable to confirm a write (StoreUnavailableError:
 * nothing may be dispatched, retry later) or something else (StoreError,
 * cause kept).
 */
import { InterlockError, StoreError, StoreUnavailableError } from '../../errors.js'

/** SQLSTATE classes and codes that say "the database, not the request": retry later. */
const TRANSIENT_CLASSES = [
  '08', // connection exception
  '53', // insufficient resources (disk full, out of memory, too many connections)
  '58', // system error (I/O)
]
const TRANSIENT_CODES = [
  '57P01', // admin_shutdown (the backend was terminated)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, in recovery)
  '57P05', // idle_session_timeout
  '57014', // query_canceled (statement_timeout)
  '25P03', // idle_in_transaction_session_timeout
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  // read_only_sql_transaction: a write reached a standby, or a primary being demoted; after a
  // failover the connection is dropped and the next one finds the new primary (hosts.ts).
  '25006',
]
/** Node's socket errors: the server never answered. */
const NETWORK_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']
/** pg's own wording when the connection drops or never comes (it sets no code). */
const DRIVER_MESSAGES = [/connection terminated/i, /timeout exceeded when trying to connect/i, /connection error/i, /not queryable/i, /server closed the connection/i]

/** SQLSTATEs that say the server itself is gone, going, or no longer the primary. */
const UNREACHABLE_CODES = ['57P01', '57P02', '57P03', '25006']

/**
 * The failure was reaching the server at all (refused, dropped, shutting
 * down, a standby now), not a slow or locked statement: a relay says so on
 * /healthz at once (context.unreachable).
 */
export function isUnreachablePgError(e: unknown): boolean {
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : ''
  if (code.length === 5 && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || UNREACHABLE_CODES.includes(code)
  if (NETWORK_CODES.includes(code)) return true
  const message = e instanceof Error ? e.message : String(e)
  return DRIVER_MESSAGES.some((m) => m.test(message))
}

export function isTransientPgError(e: unknown): boolean {
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : ''
  if (code.length === 5 && /^[0-9A-Z]{5}$/.test(code)) {
    return TRANSIENT_CLASSES.includes(code.slice(0, 2)) || TRANSIENT_CODES.includes(code)
  }
  if (NETWORK_CODES.includes(code)) return true
  const message = e instanceof Error ? e.message : String(e)
  return DRIVER_MESSAGES.some((m) => m.test(message))
}

/**
 * @param unconfirmed true when the failure came at or after COMMIT was sent:
 *   the write may or may not be durable, which the gate must treat as unavailable.
 */
export function pgError(e: unknown, what: string, where: string, unconfirmed = false): InterlockError {
  if (e instanceof InterlockError) return e
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : undefined
  const message = e instanceof Error ? e.message : String(e)
  if (unconfirmed || isTransientPgError(e)) {
    return new StoreUnavailableError(`${what} on ${where} did not complete: ${message}${code ? ` (${code})` : ''}`, {
      hint: unconfirmed
        ? 'The commit was not confirmed; nothing was dispatched. Recovery will find out what was written.'
        : 'Check that PostgreSQL is running and reachable with [store] url; retry once it is.',
      context: { code, ...(isUnreachablePgError(e) ? { unreachable: true } : {}) },
      cause: e,
    })
  }
  return new StoreError(`${what} on ${where} failed: ${message}${code ? ` (${code})` : ''}`, {
    hint: code === INSUFFICIENT_PRIVILEGE ? PRIVILEGE_HINT : undefined,
    context: { code },
    cause: e,
  })
}

const INSUFFICIENT_PRIVILEGE = '42501'
const PRIVILEGE_HINT =
  "The database role in [store] url is not granted this. Each role's grants (agent, relay, operator, read-only) are printed by `interlock install --print-grants`; an agent's outbox needs [store] access = \"agent\"."
