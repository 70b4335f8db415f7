/**
 * `interlock console`: the outbox in a browser on the operator's own machine.
 *
 * Listens on 127.0.0.1 only: nothing off this machine can connect, and the
 * Host/Origin guard keeps other sites' pages in the operator's browser out
 * (DNS rebinding, cross-site forms). Entry is by the one-time link printed
 * at start (session.ts). The operator's private key, when given, stays in
 * this process: pages never carry it, and actions sign here (actions.ts).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { InterlockError, ExitCode } from '../core/errors.js'
import { HostGuard } from '../integrations/mcp/http-guard.js'
import { loadAssets, type Assets } from './assets.js'
import type { ConsoleDeps } from './deps.js'
import { ChangeFeed } from './live.js'
import { handleRequest } from './routes.js'
import { Sessions } from './session.js'

export const CONSOLE_HOST = '127.0.0.1'

export interface ConsoleOptions {
  /** 0: any free port. */
  port: number
  /** How often open pages' outbox is looked at, besides the store's notifications. */
  pollMs?: number
  log?: (line: string) => void
  assets?: Assets
}

export interface RunningConsole {
  /** The one-time link: http://127.0.0.1:PORT/?token=… */
  url: string
  origin: string
  port: number
  close(): Promise<void>
}

export async function startConsole(deps: ConsoleDeps, options: ConsoleOptions): Promise<RunningConsole> {
  const log = options.log ?? (() => {})
  const assets = options.assets ?? loadAssets()
  const sessions = new Sessions()
  // PostgreSQL says when effects move: its poll is only the fallback (heartbeats, DISPATCHED records notify nobody).
  const pollMs = options.pollMs ?? (deps.interlock.store.subscribe ? 2_000 : 1_000)
  const feed = new ChangeFeed(deps.interlock.store, { pollMs, log })
  let guard: HostGuard | undefined
  const server = createServer((req, res) => {
    // Only between listening and learning its port: nobody has the address yet.
    if (!guard) return void res.writeHead(503).end()
    handleRequest({ deps, sessions, guard, feed, assets, log }, req, res)
  })
  await listen(server, options.port)
  const port = (server.address() as AddressInfo).port
  guard = new HostGuard({ bindHost: CONSOLE_HOST, port, allowedHosts: [], allowedOrigins: [] })
  const origin = `http://${CONSOLE_HOST}:${port}`
  let closing: Promise<void> | undefined
  return {
    url: `${origin}/?token=${sessions.pendingToken}`,
    origin,
    port,
    close: () =>
      (closing ??= (async () => {
        await feed.close()
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeAllConnections()
        await closed
      })()),
  }
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) => {
      reject(
        e.code === 'EADDRINUSE'
          ? new InterlockError('E_PORT_IN_USE', ExitCode.USAGE, `port ${port} of ${CONSOLE_HOST} is in use`, { hint: 'Pass another --port, or leave it out for any free port.' })
          : e,
      )
    }
    server.once('error', onError)
    server.listen(port, CONSOLE_HOST, () => {
      server.off('error', onError)
      resolve()
    })
  })
}
