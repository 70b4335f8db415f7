/** `interlock notary serve`'s core: the [notary] section → its log and its HTTP API. */
import type { NotaryConfig } from '../config/types.js'
import { notaryLog } from './log.js'
import { startNotaryServer, type NotaryServer } from './server.js'
import { openSqliteNotaryStore } from './sqlite/sqlite-notary-store.js'

export interface RunningNotary extends NotaryServer {
  readonly path: string
}

export async function serveNotary(config: NotaryConfig, listen: { host?: string; port?: number } = {}): Promise<RunningNotary> {
  const log = notaryLog(openSqliteNotaryStore(config.path), { agents: config.agents, services: config.services })
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
    path: config.path,
    close: async () => {
      await server.close()
      await log.close()
    },
  }
}
