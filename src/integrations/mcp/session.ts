/**
 * One client's MCP session through the proxy, and its own session with the
 * server. Everything but a side-effecting tool call passes through as it
 * is, both ways, with the SDK's low-level `Server` and `Client` (no schema of
 * the server's is parsed or rebuilt):
 *
 * - client → server: every request (tools/list, resources, subscriptions,
 *   prompts, completions, logging/setLevel, ping, and calls of read tools)
 *   is forwarded and its result returned unchanged; its progress comes back
 *   under the client's own progress token; a cancellation reaches the server
 *   (the SDK sends notifications/cancelled when the forwarded request's
 *   signal aborts); notifications (roots/list_changed…) are passed on.
 * - server → client: requests (sampling, elicitation, roots/list, ping) and
 *   notifications (list_changed, resources/updated, log messages) are passed
 *   on to the client.
 * - capabilities: the server session declares the client's (so roots only
 *   when the client has them to give); the client is told the server's
 *   (PrimedTransport), except `tasks`: a task-augmented call would bypass the
 *   journal, so the proxy does not offer tasks.
 * - a request of the server's that the client cannot be sent (over
 *   Streamable HTTP, a client with no GET stream open within REACH_GRACE_MS)
 *   is answered with an error, rather than left for the server to wait out
 *   its timeout.
 *
 * Every session is served as one principal (principal.ts): a tools/call of
 * a tool the target's `allow` / `deny` keep it from is refused first
 * (access.ts); what its reads answered is kept under its name (reads.ts).
 * A call of a tool whose tier is 1, 2 or 3 goes to the CallDesk (calls.ts).
 * A journaled call cannot be cancelled once proposed: the spec lets a
 * receiver ignore a cancellation for a request that "cannot be cancelled"
 * (modelcontextprotocol.io/specification/2025-06-18/basic/utilities/
 * cancellation), and an effect on its way is finished and journaled, so
 * asking again gets its outcome.
 */
import { context } from '@opentelemetry/api'
import { contextOfTrace, inSpan, SpanKind } from '../../core/tracing/spans.js'
import { traceContextOf } from '../../core/trace-context.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  ErrorCode,
  McpError,
  ResultSchema,
  type ClientCapabilities,
  type Implementation,
  type JSONRPCRequest,
  type Notification,
  type Progress,
  type ServerNotification,
  type ServerRequest,
  type ServerResult,
} from '@modelcontextprotocol/sdk/types.js'
import type { JsonObject } from '../../core/canonical-json.js'
import { UpstreamLink, type McpTarget, type Read } from '../../core/targets/mcp/index.js'
import { accessRefusal } from './access.js'
import type { CallDesk } from './calls.js'
import { PrimedTransport } from './primed-transport.js'
import { readCallMeta, THREAD_META } from './meta.js'
import type { Principal } from './principal.js'
import type { ThreadReads } from './reads.js'

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>
type ToolCall = { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown>; idempotencyKey?: unknown }

export interface SessionDeps {
  target: McpTarget
  desk: CallDesk
  reads: ThreadReads
  /** Every call waits for this (the proxy's recovery at start). */
  ready: Promise<void>
  log: (line: string) => void
  /** How the default thread of a session is chosen (defaultThreadName). */
  thread: ThreadChoice
}

/**
 * Whether a request of the server's can reach the client now. Over stdio it
 * always can; over Streamable HTTP only on the client's GET stream, and the
 * SDK's transport drops what it cannot send there without a word.
 */
export interface ClientReach {
  /** True once the client can be sent a request; false if it cannot within `ms`. */
  whenReachable(ms: number): Promise<boolean>
}

/** Who the session is with: its id, its principal, and (HTTP) whether it can be sent requests. */
export interface SessionPeer {
  sessionId: string
  principal: Principal
  reach?: ClientReach
}

/**
 * How long a request of the server's waits for the client to be able to take
 * it: an HTTP client opens its GET stream right after it has initialized, and
 * a server such as server-filesystem asks for roots at that very moment.
 */
const REACH_GRACE_MS = 2_000

/** "per-session", "per-client", or the name of one thread for every session. */
export type ThreadChoice = string

/**
 * The thread a session's calls go to when they name none
 * (`_meta["interlock/thread"]`):
 * - "per-session" (the default): `mcp/<target>/<session id>`, its own;
 * - "per-client": `mcp/<target>/<principal>/<client name>` (the name the
 *   client gives in `initialize`), shared by every session of the same caller
 *   and host, so a host that restarts and repeats a call gets the first's answer;
 * - any other name: that thread, for every session.
 * Characters a thread name cannot hold (effect.ts) become "-".
 */
export function defaultThreadName(choice: ThreadChoice, target: string, peer: SessionPeer, client: Implementation | undefined): string {
  if (choice === 'per-session') return `mcp/${target}/${peer.sessionId}`
  if (choice !== 'per-client') return choice
  const name = `mcp/${target}/${peer.principal.id}/${client?.name || 'unnamed-client'}`
  return name.replace(/[^A-Za-z0-9._:@/-]/g, '-').slice(0, 200)
}

export class ProxySession {
  readonly link: UpstreamLink
  private server?: Server
  private readonly primed: PrimedTransport
  private readonly done: Promise<void>
  private finish!: () => void
  /** Resolves once the client has initialized: what the server says or asks before then waits for it. */
  private readonly clientReady: Promise<void>
  private ready!: () => void
  /** Known once the client has said who it is (its `initialize`). */
  private defaultThread!: string

  constructor(
    private readonly deps: SessionDeps,
    transport: Transport,
    private readonly peer: SessionPeer,
  ) {
    this.primed = new PrimedTransport(transport)
    this.done = new Promise((resolve) => (this.finish = resolve))
    this.clientReady = new Promise((resolve) => (this.ready = resolve))
    let caps: ClientCapabilities = {}
    let clientInfo: Implementation | undefined
    this.link = deps.target.link(
      {
        get capabilities() {
          return caps
        },
        get clientInfo() {
          return clientInfo
        },
        onRequest: (request, signal) => this.toClient(request, signal),
        onNotification: (n) => void this.notifyClient(n),
        onClose: (why) => deps.log(`${deps.target.where}: ${why}; opened again at the next request`),
      },
      async (conn) => deps.target.addTools(await conn.listTools()),
    )
    this.mirror = (c, info) => {
      caps = withoutTasks(c)
      clientInfo = info
    }
  }

  private mirror: (caps: ClientCapabilities, info: Implementation | undefined) => void

  /** Serves the client until it goes away. */
  async run(): Promise<void> {
    await this.primed.open()
    const first = await Promise.race([this.primed.firstRequestSeen(), this.primed.gone.then(() => undefined)])
    if (!first) return this.close()
    const params = (first.method === 'initialize' ? first.params : undefined) as { capabilities?: ClientCapabilities; clientInfo?: Implementation } | undefined
    this.mirror(params?.capabilities ?? {}, params?.clientInfo)
    this.defaultThread = defaultThreadName(this.deps.thread, this.deps.target.name, this.peer, params?.clientInfo)
    let conn
    try {
      conn = await this.link.get()
    } catch (e) {
      this.deps.log(`${(e as Error).message}`)
      await this.primed.send({ jsonrpc: '2.0', id: first.id, error: { code: ErrorCode.InternalError, message: `interlock mcp-proxy: ${(e as Error).message}` } }).catch(() => {})
      return this.close()
    }
    const server = new Server(conn.serverInfo ?? { name: this.deps.target.name, version: '0' }, {
      capabilities: withoutTasks(conn.serverCapabilities),
      ...(conn.instructions ? { instructions: conn.instructions } : {}),
    })
    this.server = server
    // The SDK would answer these itself; the server's answer is the one to pass on.
    server.removeRequestHandler('ping')
    server.removeRequestHandler('logging/setLevel')
    server.fallbackRequestHandler = (request, extra) => this.fromClient(request, extra) as Promise<ServerResult>
    server.fallbackNotificationHandler = async (n) => {
      const up = this.link.open
      if (up) await up.notify(n).catch((e: Error) => this.deps.log(`${this.deps.target.where}: could not pass on ${n.method}: ${e.message}`))
    }
    server.onclose = () => void this.close()
    server.oninitialized = () => this.ready()
    await server.connect(this.primed)
    return this.done
  }

  async close(): Promise<void> {
    await this.link.close()
    this.finish()
  }

  private async fromClient(request: JSONRPCRequest, extra: Extra): Promise<Record<string, unknown>> {
    const params = request.params as Record<string, unknown> | undefined
    const token = (params?._meta as { progressToken?: string | number } | undefined)?.progressToken
    const onprogress = token === undefined ? undefined : (p: Progress) => void extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } } as ServerNotification)
    if (request.method === 'tools/call') {
      const call = params as ToolCall
      const refused = accessRefusal(this.deps.target.name, this.deps.target.config, call.name, this.peer.principal)
      if (refused) {
        this.deps.log(`${call.name}: refused: ${refused}`)
        return { content: [{ type: 'text', text: `interlock: refused, nothing was sent: ${refused}.` }], isError: true }
      }
      await this.deps.ready
      const decision = this.deps.target.decision(call.name)
      if (decision && decision.tier !== 'read') {
        return this.deps.desk.call(call, { link: this.link, defaultThread: this.defaultThread, principal: this.peer.principal, onprogress, read: (r) => this.read(r) })
      }
      // A read tool's call is forwarded, not journaled: one span for it all the same, in the caller's trace.
      const parent = contextOfTrace(traceContextOf(call._meta)) ?? context.active()
      return inSpan('interlock.mcp.call', { 'interlock.target': this.deps.target.name, 'interlock.tool': call.name, 'interlock.principal': this.peer.principal.id, 'interlock.journaled': false }, async () => {
        const result = await this.forward(request.method, params, extra.signal, onprogress)
        await this.remember(call, result)
        return result
      }, { parent, kind: SpanKind.SERVER })
    }
    return this.forward(request.method, params, extra.signal, onprogress)
  }

  private async forward(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal, onprogress?: (p: Progress) => void): Promise<Record<string, unknown>> {
    const conn = await this.link.get()
    return conn.request(method, params, { signal, onprogress })
  }

  /**
   * A read tool's answer, kept for the caller's thread when some tool rests
   * on that read, before the client gets it: a write it decides on is
   * checked against it, whichever proxy serves the write. Not kept, the
   * premise would silently become what the write's proposal reads, so a
   * store that cannot keep it fails the read.
   */
  private async remember(call: ToolCall, result: Record<string, unknown>): Promise<void> {
    if (!this.deps.reads.keeps(call.name)) return
    let thread = this.defaultThread
    try {
      thread = readCallMeta(call._meta).thread ?? thread
    } catch {
      return
    }
    try {
      await this.deps.reads.remember({ principal: this.peer.principal.id, thread }, { tool: call.name, args: (call.arguments ?? {}) as JsonObject }, result as JsonObject)
    } catch (e) {
      this.deps.log(`${call.name}: could not keep what it answered for premises: ${(e as Error).message}`)
      throw new McpError(ErrorCode.InternalError, `interlock mcp-proxy: the journal could not keep what ${call.name} answered, so a write resting on it could not be checked; read again: ${(e as Error).message}`)
    }
  }

  private async read(r: Read): Promise<JsonObject> {
    const conn = await this.link.get()
    return (await conn.request('tools/call', { name: r.tool, arguments: r.args })) as JsonObject
  }

  private async toClient(request: JSONRPCRequest, signal: AbortSignal): Promise<Record<string, unknown>> {
    await this.clientReady
    if (this.peer.reach && !(await this.peer.reach.whenReachable(REACH_GRACE_MS))) {
      // A plain Error: the SDK answers it as InternalError (-32603) with this message, unprefixed.
      throw new Error(`the client cannot be sent ${request.method} now: it has no stream open for the server's requests (Streamable HTTP: no GET stream)`)
    }
    return this.server!.request({ method: request.method, params: request.params } as ServerRequest, ResultSchema, { signal })
  }

  private async notifyClient(n: Notification): Promise<void> {
    if (n.method === 'notifications/tools/list_changed') {
      const conn = this.link.open
      if (conn) await conn.listTools().then((tools) => this.deps.target.addTools(tools), () => {})
    }
    // Said while the client was still initializing (a server that adds tools once it knows the client): told once it is ready.
    await this.clientReady
    await this.server!.notification(n as ServerNotification).catch((e: Error) => this.deps.log(`could not pass ${n.method} on to the client: ${e.message}`))
  }
}

function withoutTasks<T extends object>(caps: T): T {
  const { tasks: _tasks, ...rest } = caps as T & { tasks?: unknown }
  return rest as T
}

export { THREAD_META }
