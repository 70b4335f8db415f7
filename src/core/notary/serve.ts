/** `interlock notary serve`'s core: the [notary] section → its log and its HTTP API. */
import type { NotaryConfig } from '../config/types.js'
import { describePostgres } from '../stores/postgres/connect.js'
import { notaryLog } from './log.js'
import { openPostgresNotaryStore } from './postgres/pg-notary-store.js'
import { startNotaryServer, type NotaryServer } from './server.js'
import { openSqliteNotaryStore } from './sqlite/sqlite-notary-store.js'
import type { NotaryStore } from './store.js'

export interface RunningNotary extends NotaryServer {
  /** Where the log is: the SQLite file, or the PostgreSQL schema (named without credentials). */
  readonly path: string
}

export async function serveNotary(config: NotaryConfig, listen: { host?: string; port?: number } = {}): Promise<RunningNotary> {
  const pg = config.postgres
  const store: NotaryStore = pg ? await openPostgresNotaryStore({ url: pg.url, schema: pg.schema }) : openSqliteNotaryStore(config.path)
  const log = notaryLog(store, { agents: config.agents, services: config.services })
  let server: NotaryServer
  try {
    server = await startNotaryServer(log, { host: listen.host ?? config.host, port: listen.port ?? config.port })
  } catch (err) {
    await log.close()
    throw err
  }
  return {
    url: server.url,
    port: server.port,
    metrics: server.metrics,
    path: pg ? describePostgres(pg.url, pg.schema) : config.path,
    close: async () => {
      await server.close()
      await log.close()
    },
  }
}
