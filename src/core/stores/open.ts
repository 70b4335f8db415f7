/**
 * The one way the rest of Interlock opens a store: from `[store]` in
 * interlock.toml to a ready Store, with its schema checked and group commit
 * in front of it.
 *
 * Each driver is imported only when its kind is asked for, so an embedded
 * SQLite user never loads `pg` and a Postgres relay never loads the native
 * SQLite module.
 */
import type { Clock } from '../clock.js'
import type { StoreConfig } from '../config/types.js'
import { withGroupCommit, type GroupCommitOptions } from './group-commit.js'
import type { Store } from './store.js'

export interface OpenStoreOptions {
  /**
   * Create or upgrade the schema while opening. Default: true for SQLite (the
   * embedded default must need no set-up), false for PostgreSQL (a shared
   * database is installed by a DBA with `interlock install`). When false, a
   * database not at this binary's schema version is refused with
   * SchemaVersionError ("run `interlock install`").
   */
  autoInstall?: boolean
  /** Where record timestamps come from (default: the system clock). */
  clock?: Clock
  /** Coalesce concurrent appends into one transaction (default true); false hands back the bare store. */
  groupCommit?: boolean | GroupCommitOptions
  /** SQLite: how long to wait for another process's write lock (default 10 s). */
  busyTimeoutMs?: number
  /** PostgreSQL: most connections in the pool (default 10). */
  maxConnections?: number
}

export async function openStore(config: StoreConfig, options: OpenStoreOptions = {}): Promise<Store> {
  let store: Store
  if (config.kind === 'sqlite') {
    const { openSqliteStore } = await import('./sqlite/open.js')
    store = openSqliteStore(config.path, {
      autoInstall: options.autoInstall ?? true,
      clock: options.clock,
      busyTimeoutMs: options.busyTimeoutMs,
    })
  } else {
    const { openPostgresStore } = await import('./postgres/open.js')
    store = await openPostgresStore(config, {
      autoInstall: options.autoInstall ?? false,
      clock: options.clock,
      maxConnections: options.maxConnections,
    })
  }
  if (options.groupCommit === false) return store
  return withGroupCommit(store, options.groupCommit === true ? {} : options.groupCommit)
}
