/**
 * One MCP session with the upstream server, through the SDK's low-level
 * `Client` (no schema of the server's tools is parsed or rewritten: results
 * pass through with the SDK's loose ResultSchema, unknown fields kept).
 *
 * - stdio: the server is spawned with `command`, `args` and `cwd`, and an
 *   environment of only HOME, LOGNAME, PATH, SHELL, TERM and USER (the SDK's
 *   default) plus the target's `env_pass` and `env`: nothing else of
 *   Interlock's own environment (a database URL, a relay key's passphrase)
 *   reaches it (environment.ts). Its
 *   stderr is passed on to ours, stdout being the protocol channel. It runs
 *   in a process group of its own, stopped whole when the session ends
 *   (server-process.ts).
 * - Streamable HTTP: `url` with the target's `headers`.
 *
 * What the server asks of the client (sampling, elicitation, roots, ping) and
 * what it notifies (list changes, resource updates, log messages) goes to the
 * hooks: the proxy passes them on to its own client; without hooks a request
 * is answered "method not found", as a client without that capability would.
 *
 * A server that writes something that is not JSON-RPC on its protocol channel
 * is broken (the spec allows nothing else there: modelcontextprotocol.io/
 * specification/2025-06-18/basic/transports#stdio); the session is closed so
 * that calls in flight end at once, their outcome unknown, rather than hang
 * until their timeout.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  ErrorCode,
  McpError,
  ResultSchema,
  type ClientCapabilities,
  type ClientRequest,
  type Implementation,
  type JSONRPCRequest,
  type Notification,
  type Progress,
  type Result,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js'
import type { McpTargetConfig } from '../../config/types.js'
import { environmentNote } from './environment.js'
import { UpstreamUnavailable } from './link.js'
import { ServerProcessTransport } from './server-process.js'

export type UpstreamSpec = Pick<McpTargetConfig, 'command' | 'args' | 'env' | 'envPass' | 'cwd' | 'url' | 'headers' | 'timeoutMs' | 'connectTimeoutMs'>

export interface UpstreamHooks {
  /** The client's capabilities to declare (the proxy mirrors its own client's); default none. */
  capabilities?: ClientCapabilities
  /** Who the session says it is (the proxy passes its client's name on). */
  clientInfo?: Implementation
  /** A request from the server (sampling, elicitation, roots, ping); default: "method not found". */
  onRequest?: (request: JSONRPCRequest, signal: AbortSignal) => Promise<Result>
  /** A notification from the server, any but progress of this session's own requests. */
  onNotification?: (notification: Notification) => void
  /** The session ended (the server exited, the stream broke, or close()). */
  onClose?: (why: string) => void
  /** Where a stdio server's stderr goes (default: ours). */
  stderr?: 'inherit' | 'ignore'
  /** The target's key in interlock.toml (`targets.<name>`), named when the server does not start. */
  configKey?: string
}

export interface CallOptions {
  signal?: AbortSignal
  /** Progress the server reports for this request. */
  onprogress?: (progress: Progress) => void
  /** Default: the target's timeout_ms; progress restarts it. */
  timeoutMs?: number
}

const CLIENT_INFO: Implementation = { name: 'interlock', version: '1' }

export class UpstreamConnection {
  private closedWhy?: string

  private constructor(
    readonly client: Client,
    private readonly transport: Transport,
    private readonly spec: UpstreamSpec,
  ) {}

  /** Starts or reaches the server and initializes a session, within connect_timeout_ms. */
  static async open(spec: UpstreamSpec, where: string, hooks: UpstreamHooks = {}): Promise<UpstreamConnection> {
    const client = new Client({ ...CLIENT_INFO, ...hooks.clientInfo }, { capabilities: hooks.capabilities ?? {} })
    const transport = transportFor(spec, hooks)
    const conn = new UpstreamConnection(client, transport, spec)
    // The SDK's own answers to these would hide the server's question from our client: pass them on.
    client.removeRequestHandler('ping')
    client.fallbackRequestHandler = async (request: JSONRPCRequest, extra: RequestHandlerExtra<ClientRequest, Notification>) => {
      if (!hooks.onRequest) throw new McpError(ErrorCode.MethodNotFound, `${request.method} is not offered by this client`)
      return hooks.onRequest(request, extra.signal) as never
    }
    client.fallbackNotificationHandler = async (n) => hooks.onNotification?.(n)
    client.onerror = (error) => {
      // A line that is not JSON, or JSON that is not JSON-RPC: the stream cannot be trusted any more.
      if (error instanceof SyntaxError || error.name === 'ZodError' || error.name === '$ZodError') {
        conn.closedWhy = `${where} sent something that is not JSON-RPC on its protocol channel (${firstLine(error.message)})`
        void client.close()
      }
    }
    client.onclose = () => {
      conn.closedWhy ??= `${where} closed the session`
      hooks.onClose?.(conn.closedWhy)
    }
    const timer = AbortSignal.timeout(spec.connectTimeoutMs)
    try {
      await client.connect(transport, { signal: timer, timeout: spec.connectTimeoutMs })
    } catch (e) {
      // Awaited: a server that never answered initialize is stopped, with its group, before this says so.
      await client.close().catch(() => {})
      const why = timer.aborted ? `no answer to initialize within ${spec.connectTimeoutMs} ms` : (e as Error).message
      // A stdio server that needs a variable it was not given hangs or exits here: say what it had.
      const env = spec.url ? '' : `; ${environmentNote(spec, hooks.configKey ?? 'the target')}`
      throw new UpstreamUnavailable(`${where} could not be ${spec.url ? 'reached' : 'started'}: ${why}${env}`, { cause: e })
    }
    return conn
  }

  get closed(): boolean {
    return this.closedWhy !== undefined
  }

  /** Why the session ended, once it has. */
  get closedReason(): string | undefined {
    return this.closedWhy
  }

  get serverCapabilities(): ServerCapabilities {
    return this.client.getServerCapabilities() ?? {}
  }

  get serverInfo(): Implementation | undefined {
    return this.client.getServerVersion()
  }

  get instructions(): string | undefined {
    return this.client.getInstructions()
  }

  /**
   * One request, its result as the server sent it. Sent synchronously within
   * this call (the SDK writes to the transport inside the request's promise
   * executor), so a fence asked right before it is the last word.
   */
  request(method: string, params: Record<string, unknown> | undefined, options: CallOptions = {}): Promise<Result> {
    if (this.closed) return Promise.reject(new UpstreamUnavailable(this.closedWhy!))
    const request = (params === undefined ? { method } : { method, params }) as ClientRequest
    return this.client.request(request, ResultSchema, {
      signal: options.signal,
      onprogress: options.onprogress,
      timeout: options.timeoutMs ?? this.spec.timeoutMs,
      // A server that reports progress is working, not hung.
      resetTimeoutOnProgress: true,
    })
  }

  /** Every tool the server lists, page by page. */
  async listTools(options: CallOptions = {}): Promise<Record<string, unknown>[]> {
    const tools: Record<string, unknown>[] = []
    let cursor: string | undefined
    do {
      const page = await this.request('tools/list', cursor === undefined ? undefined : { cursor }, options)
      for (const t of (page.tools as unknown[]) ?? []) if (t !== null && typeof t === 'object') tools.push(t as Record<string, unknown>)
      cursor = typeof page.nextCursor === 'string' && page.nextCursor !== '' ? page.nextCursor : undefined
    } while (cursor !== undefined)
    return tools
  }

  notify(notification: Notification): Promise<void> {
    return this.client.notification(notification as never)
  }

  async close(): Promise<void> {
    this.closedWhy ??= 'closed by Interlock'
    if (this.transport instanceof StreamableHTTPClientTransport) await this.transport.terminateSession().catch(() => {})
    await this.client.close().catch(() => {})
  }
}

function transportFor(spec: UpstreamSpec, hooks: UpstreamHooks): Transport {
  if (spec.url) return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } })
  return new ServerProcessTransport({ command: spec.command!, args: spec.args, env: spec.env, envPass: spec.envPass, cwd: spec.cwd, stderr: hooks.stderr ?? 'inherit' })
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? ''
  return line.length > 200 ? `${line.slice(0, 200)}…` : line
}

export { UpstreamLink, UpstreamUnavailable } from './link.js'
