/**
 * One reconcile at a time per store, so a cron job that fires while the last
 * run is still going exits quietly instead of racing it.
 *
 * Both locks die with their holder, so no stale lock can outlive a crashed run:
 * - PostgreSQL: `pg_try_advisory_lock` on a session of its own, keyed by the
 *   schema; the server drops it when that session ends (process killed too).
 * - SQLite: an EXCLUSIVE transaction on a small lock database beside the
 *   journal (`<journal>.reconcile-lock`). SQLite takes it as an OS file lock,
 *   which the kernel releases when the process exits however it exits; a
 *   second process (or a second connection in this one) gets SQLITE_BUSY at
 *   once. This avoids the pid-file's stale-pid race (two runs both judging
 *   the same pid dead and both taking the lock).
 */
import type { StoreConfig } from '../config/types.js'
import { StoreError } from '../errors.js'

export interface ReconcileLock {
  /** Where the lock lives, for messages (no credentials). */
  readonly where: string
  release(): Promise<void>
}

/** The lock, or null when another reconcile holds it. */
export async function tryReconcileLock(config: StoreConfig): Promise<ReconcileLock | null> {
  if (config.kind === 'postgres') {
    const { tryPostgresLock } = await import('./postgres-lock.js')
    return tryPostgresLock(config)
  }
  const { trySqliteLock } = await import('./sqlite-lock.js')
  return trySqliteLock(config.path)
}

export function lockError(where: string, cause: unknown): StoreError {
  return new StoreError(`cannot take the reconcile lock at ${where}: ${cause instanceof Error ? cause.message : String(cause)}`, {
    hint: 'Check that the store is reachable and its folder writable.',
    context: { lock: where },
    cause,
  })
}
