/** `interlock notary serve`'s core: the [notary] section → its log and its HTTP API. */
import type { NotaryConfig } from '../config/types.js'
import { notaryLog } from './log.js'
import { openNotaryStore } from './open.js'
import { startNotaryServer, type NotaryServer } from './server.js'

export interface RunningNotary extends NotaryServer {
  /** Where the log is: the SQLite file, or the PostgreSQL schema (named without credentials). */
  readonly path: string
}

export async function serveNotary(config: NotaryConfig, listen: { host?: string; port?: number } = {}): Promise<RunningNotary> {
  const { store, path } = await openNotaryStore(config)
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
    path,
    close: async () => {
      await server.close()
      await log.close()
    },
  }
}
