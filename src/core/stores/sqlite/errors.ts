/**
 * Driver errors → Interlock errors. What matters to the gate is one line:
 * could this write have failed to become durable for reasons outside the
 * request (locked by another process too long, disk full, I/O error)? Then it
 * is StoreUnavailableError and nothing may be dispatched; anything else is a
 * StoreError that keeps its cause.
 */
import { IntegrityError, InterlockError, StoreError, StoreUnavailableError } from '../../errors.js'

const UNAVAILABLE = ['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_CANTOPEN', 'SQLITE_PROTOCOL', 'SQLITE_NOLFS', 'SQLITE_READONLY']

export function sqliteError(e: unknown, what: string, file: string): InterlockError {
  if (e instanceof InterlockError) return e
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : ''
  const message = e instanceof Error ? e.message : String(e)
  // The file itself is damaged (truncated, overwritten): nothing in it can be trusted to act on.
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
    return new IntegrityError(`${what} on the SQLite journal ${file} failed: the file is damaged: ${message} (${code})`, {
      hint: 'Restore the journal from a backup before resuming; keep the damaged file for inspection.',
      context: { path: file, code },
      cause: e,
    })
  }
  // Extended codes (SQLITE_IOERR_FSYNC, SQLITE_BUSY_SNAPSHOT...) share their primary code's prefix.
  if (UNAVAILABLE.some((c) => code === c || code.startsWith(`${c}_`))) {
    return new StoreUnavailableError(`${what} on the SQLite journal ${file} did not complete: ${message} (${code})`, {
      hint: code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')
        ? 'Another process held the journal too long; retry, and check for a stuck process holding it.'
        : 'Check free disk space and the health of the disk holding the journal.',
      context: { path: file, code },
      cause: e,
    })
  }
  return new StoreError(`${what} on the SQLite journal ${file} failed: ${message}${code ? ` (${code})` : ''}`, {
    context: { path: file, code },
    cause: e,
  })
}
