/**
 * Opens a PostgresStore from `[store]`: a pool, the schema installed when
 * asked (off by default: a shared database is a DBA's to change), then the
 * schema version checked against this binary.
 */
import type { Clock } from '../../clock.js'
import { DEFAULTS } from '../../config/defaults.js'
import type { PostgresStoreConfig } from '../../config/types.js'
import { requireCurrentSchema } from '../migrations.js'
import { createPool, describePostgres } from './connect.js'
import { pgError } from './errors.js'
import { quoteSchema } from './identifier.js'
import { migratePostgres, readAppliedPostgres } from './migrator.js'
import { PostgresStore } from './store.js'

export interface OpenPostgresOptions {
  autoInstall: boolean
  clock?: Clock
  maxConnections?: number
  /** Records per round trip when reading journals (tests use small pages). */
  pageSize?: number
}

export async function openPostgresStore(config: PostgresStoreConfig, options: OpenPostgresOptions): Promise<PostgresStore> {
  quoteSchema(config.schema)
  const where = describePostgres(config.url, config.schema)
  const pool = createPool(config.url, {
    maxConnections: options.maxConnections,
    // Hand-built configs carry none: the defaults of interlock.toml apply to them too.
    limits: {
      statementTimeoutMs: config.statementTimeoutMs ?? DEFAULTS.storeStatementTimeoutMs,
      lockTimeoutMs: config.lockTimeoutMs ?? DEFAULTS.storeLockTimeoutMs,
      idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs ?? DEFAULTS.storeIdleInTransactionTimeoutMs,
    },
  })
  try {
    const client = await pool.connect()
    try {
      if (options.autoInstall) {
        // Installing waits for a concurrent install's lock and may run long, as `interlock install` may:
        // without the store's limits, on a connection closed afterwards rather than pooled with them lifted.
        await client.query('SET statement_timeout = 0; SET lock_timeout = 0')
        await migratePostgres(client, config.schema, where)
      }
      requireCurrentSchema('postgres', await readAppliedPostgres(client, config.schema), where)
    } finally {
      client.release(options.autoInstall ? true : undefined)
    }
    return new PostgresStore(pool, config.schema, { clock: options.clock, where, pageSize: options.pageSize, url: config.url, access: config.access })
  } catch (e) {
    await pool.end().catch(() => {})
    throw pgError(e, 'opening the store', where)
  }
}
