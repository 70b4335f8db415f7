/**
 * `interlock mcp-proxy --http HOST:PORT`: the proxy as a Streamable HTTP
 * server (modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http)
 * at `/mcp`, one proxy session per MCP session (the SDK's
 * StreamableHTTPServerTransport; its Mcp-Session-Id also names the session's
 * default thread). Each session has its own session with the server, so what
 * the server asks during a call (sampling, elicitation) reaches the client
 * that made the call.
 *
 * A request of the server's goes to the client on its GET stream (the SDK's
 * transport sends it nowhere else, and drops it when that stream is not
 * open): GetStream tells the session whether one is, so that the server's
 * request to a client without one is refused (after a short grace: a client
 * opens it right after it has initialized) instead of left unanswered.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { UNAUTHENTICATED } from './principal.js'
import type { McpProxy } from './proxy.js'
import type { ClientReach } from './session.js'

export const MCP_PATH = '/mcp'

export interface HttpListener {
  /** http://host:port/mcp */
  url: string
  close(): Promise<void>
}

export async function serveHttp(proxy: McpProxy, host: string, port: number, log: (line: string) => void): Promise<HttpListener> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; stream: GetStream }>()
  const server = createServer((req, res) => {
    void handle(req, res).catch((e: Error) => {
      log(`mcp-proxy: ${req.method} ${req.url}: ${e.message}`)
      if (!res.headersSent) refuse(res, 500, 'internal error')
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://proxy').pathname !== MCP_PATH) return refuse(res, 404, `not found: the MCP endpoint is ${MCP_PATH}`)
    const sid = req.headers['mcp-session-id']
    if (typeof sid === 'string') {
      const known = sessions.get(sid)
      // The spec's answer to a session the server does not know: 404, and the client starts a new one.
      if (!known) return refuse(res, 404, 'session not found')
      if (req.method === 'GET') known.stream.watch(res)
      return known.transport.handleRequest(req, res)
    }
    if (req.method !== 'POST') return refuse(res, 400, 'no Mcp-Session-Id: start with an initialize request')
    const id = randomUUID()
    const stream = new GetStream()
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => void sessions.set(id, { transport, stream }),
      onsessionclosed: () => void sessions.delete(id),
    })
    void proxy.serve(transport, id, UNAUTHENTICATED, stream).finally(() => sessions.delete(id))
    await transport.handleRequest(req, res)
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const address = server.address() as AddressInfo
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${shownHost}:${address.port}${MCP_PATH}`,
    async close() {
      await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()))
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
}

/**
 * A session's GET streams (the spec allows one at a time; a client may open
 * another after one broke): open from the moment the transport has answered
 * 200 until the response ends.
 */
class GetStream implements ClientReach {
  private readonly responses = new Set<ServerResponse>()

  watch(res: ServerResponse): void {
    this.responses.add(res)
    res.once('close', () => this.responses.delete(res))
  }

  get open(): boolean {
    return [...this.responses].some((r) => r.headersSent && r.statusCode === 200 && !r.writableEnded && !r.destroyed)
  }

  async whenReachable(ms: number): Promise<boolean> {
    const end = Date.now() + ms
    while (!this.open) {
      if (Date.now() >= end) return false
      await new Promise((r) => setTimeout(r, 20))
    }
    return true
  }
}
