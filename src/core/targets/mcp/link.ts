/**
 * The session a target, the proxy or a probe holds to its MCP server, opened
 * on first use. The SDK (connection.ts) is loaded then, not when a target is
 * made: every command makes the targets of interlock.toml, and most never
 * call one (bench/cli/start.ts).
 */
import type { UpstreamConnection, UpstreamHooks, UpstreamSpec } from './connection.js'

/** Thrown before anything was sent: the server could not be started, reached or initialized. */
export class UpstreamUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'UpstreamUnavailable'
  }
}

/**
 * A session that is opened on first use and opened again when it has ended
 * (a server that died is started anew at the next call). Callers that ask
 * while it opens share the one attempt.
 */
export class UpstreamLink {
  private current?: UpstreamConnection
  private opening?: Promise<UpstreamConnection>
  private ended = false

  constructor(
    private readonly spec: UpstreamSpec,
    readonly where: string,
    private readonly hooks: UpstreamHooks = {},
    /** Told of each new session once it is up (the proxy reads its tool list then). */
    private readonly onOpen?: (conn: UpstreamConnection) => void | Promise<void>,
  ) {}

  get(): Promise<UpstreamConnection> {
    if (this.ended) return Promise.reject(new UpstreamUnavailable(`${this.where}: closed`))
    if (this.current && !this.current.closed) return Promise.resolve(this.current)
    this.opening ??= (async () => {
      try {
        const { UpstreamConnection } = await import('./connection.js')
        const conn = await UpstreamConnection.open(this.spec, this.where, this.hooks)
        this.current = conn
        await this.onOpen?.(conn)
        return conn
      } finally {
        this.opening = undefined
      }
    })()
    return this.opening
  }

  /** The session now, if one is open. */
  get open(): UpstreamConnection | undefined {
    return this.current && !this.current.closed ? this.current : undefined
  }

  /** Ends the session now, if one is open; the next use opens another. */
  async idle(): Promise<void> {
    const conn = this.current ?? (await this.opening?.catch(() => undefined))
    this.current = undefined
    await conn?.close()
  }

  async close(): Promise<void> {
    this.ended = true
    await this.idle()
  }
}
