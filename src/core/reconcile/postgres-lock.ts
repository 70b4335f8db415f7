/** The PostgreSQL store's reconcile lock: a session advisory lock (see lock.ts). */
import type { PostgresStoreConfig } from '../config/types.js'
import { connectClient, describePostgres } from '../stores/postgres/connect.js'
import { lockError, type ReconcileLock } from './lock.js'

export async function tryPostgresLock(config: PostgresStoreConfig): Promise<ReconcileLock | null> {
  const where = `${describePostgres(config.url, config.schema)} (advisory lock)`
  const client = await connectClient(config.url, where)
  try {
    // One key per schema: two installs in one database reconcile independently.
    const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [
      `interlock.reconcile-effects:${config.schema}`,
    ])
    if (!r.rows[0]!.ok) {
      await client.end()
      return null
    }
  } catch (e) {
    await client.end().catch(() => {})
    throw lockError(where, e)
  }
  return {
    where,
    // Ending the session releases the lock; no explicit unlock needed.
    release: () => client.end().catch(() => {}),
  }
}
