/** The [notary] section's log store: SQLite by default, PostgreSQL with [notary] url. */
import { existsSync } from 'node:fs'
import type { InterlockConfig, NotaryConfig } from '../config/types.js'
import { ConfigError, NotFoundError } from '../errors.js'
import { describePostgres } from '../stores/postgres/connect.js'
import { openPostgresNotaryStore } from './postgres/pg-notary-store.js'
import { openSqliteNotaryStore } from './sqlite/sqlite-notary-store.js'
import type { NotaryStore } from './store.js'

export interface OpenedNotaryStore {
  store: NotaryStore
  /** Where the log is: the SQLite file, or the PostgreSQL schema (named without credentials). */
  path: string
}

/**
 * Opens the log. `existing`: for readers (`notary verify`), which must not
 * create an empty log where they expected one and then call it whole; a
 * missing SQLite file is NotFoundError, and PostgreSQL's schema is not installed.
 */
export async function openNotaryStore(config: NotaryConfig, opts: { existing?: boolean } = {}): Promise<OpenedNotaryStore> {
  const pg = config.postgres
  if (pg) return { store: await openPostgresNotaryStore({ url: pg.url, schema: pg.schema, install: !opts.existing }), path: describePostgres(pg.url, pg.schema) }
  if (opts.existing && !existsSync(config.path)) {
    throw new NotFoundError(`the notary's log ${config.path} does not exist`, { hint: 'Check [notary] path in interlock.toml: it names the file `interlock notary serve` writes.' })
  }
  return { store: openSqliteNotaryStore(config.path), path: config.path }
}

/** The [notary] section, which `notary serve` and `notary verify` cannot do without. */
export function notarySection(config: Pick<InterlockConfig, 'file' | 'notary'>): NotaryConfig {
  if (config.notary) return config.notary
  throw new ConfigError(`${config.file ?? 'interlock.toml'} has no [notary] section`, [], {
    hint: 'Add [notary] with listen, path (or url for PostgreSQL), and the trusted keys under [notary.agents] and [notary.services].',
  })
}
