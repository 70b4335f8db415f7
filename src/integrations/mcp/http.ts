/**
 * `interlock mcp-proxy --http HOST:PORT`: the proxy as a Streamable HTTP
 * server (modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http)
 * at `/mcp`, one proxy session per MCP session (the SDK's
 * StreamableHTTPServerTransport; its Mcp-Session-Id also names the session's
 * default thread). Each session has its own session with the server, so what
 * the server asks during a call (sampling, elicitation) reaches the client
 * that made the call.
 *
 * Every request passes, in order: the Host and Origin check (http-guard.ts,
 * 403), then authentication (http-auth.ts, 401/403), then the session: a
 * session belongs to the principal whose credentials initialized it, and a
 * request of anyone else naming its Mcp-Session-Id is answered as for an
 * unknown session (404), so a session id is worth nothing without the
 * credentials. Nothing refused reaches a session, the journal or the server.
 * With OAuth, the protected resource metadata is served at
 * /.well-known/oauth-protected-resource (and .../mcp), past the Host check.
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
import type { HttpAccess } from './http-access.js'
import { METADATA_PATH, resourceOf, type Resource } from './http-auth.js'
import { HostGuard } from './http-guard.js'
import { UNAUTHENTICATED, type Principal } from './principal.js'
import type { ClientReach } from './session.js'

export const MCP_PATH = '/mcp'

export interface HttpListener {
  /** http://host:port/mcp */
  url: string
  /** How the endpoint is protected (allowed hosts and origins, authentication), for the log: never a token. */
  protection: string
  close(): Promise<void>
}

interface Session {
  transport: StreamableHTTPServerTransport
  principal: Principal
  stream: GetStream
}

/** What serves MCP sessions: McpProxy (an upstream server's tools) or ModuleToolProxy (a target module's). */
export interface SessionServer {
  serve(transport: StreamableHTTPServerTransport, sessionId: string, principal: Principal, reach?: ClientReach): Promise<void>
}

export async function serveHttp(proxy: SessionServer, host: string, port: number, log: (line: string) => void, access: HttpAccess): Promise<HttpListener> {
  const sessions = new Map<string, Session>()
  let guard: HostGuard | undefined
  const metadataPaths = new Set([METADATA_PATH, `${METADATA_PATH}${MCP_PATH}`, ...(access.resource ? [resourceOf(access.resource).metadataUrl.replace(/^https?:\/\/[^/]+/, '')] : [])])
  const server = createServer((req, res) => {
    void handle(req, res).catch((e: Error) => {
      log(`mcp-proxy: ${req.method} ${req.url}: ${e.message}`)
      if (!res.headersSent) refuse(res, 500, 'internal error')
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!guard) return refuse(res, 503, 'starting')
    const invalid = guard.refusal(req.headers)
    if (invalid) return refuse(res, 403, invalid)
    const path = new URL(req.url ?? '/', 'http://proxy').pathname
    const resource = resourceOf(access.resource ?? new URL(`http://${req.headers.host}${MCP_PATH}`).href)
    if (metadataPaths.has(path)) return metadata(req, res, resource)
    if (path !== MCP_PATH) return refuse(res, 404, `not found: the MCP endpoint is ${MCP_PATH}`)
    const who = access.auth ? await access.auth.authenticate(req.headers.authorization, resource) : { ok: true as const, principal: UNAUTHENTICATED }
    if (!who.ok) {
      if (who.status === 503) log(`mcp-proxy: ${who.message}`)
      return refuse(res, who.status, who.message, who.challenge ? { 'www-authenticate': who.challenge } : {})
    }
    const sid = req.headers['mcp-session-id']
    if (typeof sid === 'string') {
      const known = sessions.get(sid)
      // The spec's answer to a session the server does not know: 404, and the client starts a new one.
      // Another principal's session is one this caller does not know.
      if (!known || known.principal.id !== who.principal.id) return refuse(res, 404, 'session not found')
      if (req.method === 'GET') known.stream.watch(res)
      return known.transport.handleRequest(req, res)
    }
    if (req.method !== 'POST') return refuse(res, 400, 'no Mcp-Session-Id: start with an initialize request')
    const id = randomUUID()
    const stream = new GetStream()
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => void sessions.set(id, { transport, principal: who.principal, stream }),
      onsessionclosed: () => void sessions.delete(id),
    })
    void proxy.serve(transport, id, who.principal, stream).finally(() => sessions.delete(id))
    await transport.handleRequest(req, res)
    // Anything but an initialize (the transport answered 400) began no session: the proxy session waiting for one ends here.
    if (transport.sessionId === undefined) await transport.close()
  }

  function metadata(req: IncomingMessage, res: ServerResponse, resource: Resource): void {
    const doc = access.auth?.metadata(resource)
    if (!doc) return refuse(res, 404, 'not found: this proxy does not take OAuth access tokens')
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'GET only', { allow: 'GET, HEAD' })
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(req.method === 'HEAD' ? undefined : JSON.stringify(doc))
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const address = server.address() as AddressInfo
  guard = new HostGuard({ bindHost: host, port: address.port, allowedHosts: access.allowedHosts, allowedOrigins: access.allowedOrigins })
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const authText = access.auth ? `authentication: ${access.auth.describe()}` : 'NO authentication (--insecure-no-auth): every local process can call'
  return {
    url: `http://${shownHost}:${address.port}${MCP_PATH}`,
    protection: `${guard.describe()}; ${authText}${access.resource ? `; resource ${access.resource}` : ''}`,
    async close() {
      await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()))
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
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
