/**
 * What a failed apply means for the effect, as a DispatchFault kind
 * (errors.ts). The line that matters is COMMIT: PostgreSQL never commits a
 * transaction block without it, and rolls back the transaction of a lost
 * connection, so
 *
 * - `connect`: no connection, nothing sent → 'not-sent' (a refused login too:
 *   nothing happened, and once the credentials are fixed recovery finishes);
 * - `transaction` (BEGIN ... INSERT, COMMIT not yet sent): nothing can have
 *   landed. A broken connection or a client-side timeout → 'not-sent' (the
 *   server rolls back when it sees the socket close); a transient server
 *   error (statement_timeout, lock or deadlock, serialization, resources;
 *   sorted by SQLSTATE class with the store's isTransientPgError) →
 *   'retry-later'; any other server error (23xxx constraint, 42xxx syntax,
 *   permission, undefined column, 22xxx bad value...) → 'refused', with
 *   PostgreSQL's own message;
 * - `commit` (COMMIT sent): only an answer that says "rolled back" is definite
 *   (23xxx deferred constraint → 'refused', 40xxx → 'retry-later'); a lost
 *   connection, a timeout or anything else → 'unknown': the commit may have
 *   happened, so the gate asks query() before sending again.
 *
 * Messages keep PostgreSQL's words but pass through the target's secrets
 * (the URL and its password) first.
 */
import { redact } from '../../config/redact.js'
import { DispatchFault, InterlockError, type DispatchFaultKind } from '../../errors.js'
import { isTransientPgError } from '../../stores/postgres/errors.js'

export type Phase = 'connect' | 'transaction' | 'commit'

/** A SQLSTATE when the server sent one; undefined for socket and driver errors. */
export function sqlStateOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown })?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/** The server's ErrorResponse said the session is going away (terminated backend, shutdown): a broken connection. */
function isConnectionLoss(state: string | undefined): boolean {
  return state === undefined || state.startsWith('08') || ['57P01', '57P02', '57P03'].includes(state)
}

/** pg's message when it refused to write to a connection it already knew was broken: COMMIT never left. */
const NOT_WRITTEN = /not queryable/i

export function faultOf(e: unknown, phase: Phase, where: string, secrets: readonly string[]): DispatchFault {
  if (e instanceof DispatchFault) return e
  const state = sqlStateOf(e)
  const words = redact(describePgError(e), secrets)
  const fault = (kind: DispatchFaultKind, what: string, hint?: string) =>
    new DispatchFault(kind, `${where}: ${what}: ${words}`, { hint, context: { sqlstate: state, phase }, cause: e })

  if (phase === 'connect') return fault('not-sent', 'could not connect; nothing was sent', 'Check that the database is up and the target url is right.')

  if (phase === 'commit') {
    if (!state && NOT_WRITTEN.test(words)) return fault('not-sent', 'the connection broke before COMMIT was written; the transaction was rolled back')
    if (state?.startsWith('23')) return fault('refused', 'COMMIT was refused and rolled back')
    if (state?.startsWith('40')) return fault('retry-later', 'COMMIT was rolled back by a concurrent transaction')
    return fault('unknown', 'COMMIT was sent but its answer was lost; the row may or may not be there')
  }

  if (e instanceof InterlockError) return fault('refused', 'refused before anything was written')
  if (state === undefined || (isTransientPgError(e) && isConnectionLoss(state))) {
    return fault('not-sent', 'the connection broke before COMMIT; PostgreSQL rolled the transaction back')
  }
  if (isTransientPgError(e)) return fault('retry-later', 'the transaction was rolled back and may be retried')
  return fault('refused', 'PostgreSQL refused the statement; nothing was written', hintFor(state))
}

/** PostgreSQL's message, its detail, and the SQLSTATE, in one line. */
export function describePgError(e: unknown): string {
  const err = e as { message?: unknown; detail?: unknown; code?: unknown }
  const message = e instanceof Error ? e.message : typeof err?.message === 'string' ? err.message : String(e)
  const detail = typeof err?.detail === 'string' && err.detail ? ` (${err.detail})` : ''
  const state = sqlStateOf(e)
  const code = state ? ` [SQLSTATE ${state}]` : typeof err?.code === 'string' ? ` [${err.code}]` : ''
  return `${message || 'connection error'}${detail}${code}`
}

function hintFor(state: string): string | undefined {
  if (state === '42501') return 'Grant the target\'s database user the privilege named, or point url at a user that has it.'
  if (state.startsWith('42')) return 'Check table, columns, premise_sql and compensate_sql against the database.'
  if (state.startsWith('23')) return 'The row breaks a constraint of the table; fix the effect\'s args.'
  if (state.startsWith('22')) return 'An args value does not fit its column\'s type.'
  return undefined
}
