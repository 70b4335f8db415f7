/**
 * A client's transport, held until the proxy knows who the client is.
 *
 * The proxy mirrors both sides: to the server it declares the client's
 * capabilities (a server may offer tools only to clients that can sample or
 * elicit), to the client the server's. So the client's `initialize` must be
 * read before the session with the server is opened, and the session must be
 * open before the proxy can answer `initialize`. This wrapper starts the
 * client's transport, keeps what arrives until `release()`, then hands it to
 * the SDK `Server` connected to it, in order, as if it had just arrived.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage, JSONRPCRequest, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js'

export class PrimedTransport implements Transport {
  onmessage?: Transport['onmessage']
  onclose?: () => void
  onerror?: (error: Error) => void
  private readonly held: { message: JSONRPCMessage; extra?: MessageExtraInfo }[] = []
  private live = false
  private firstRequest?: (request: JSONRPCRequest) => void
  private readonly first: Promise<JSONRPCRequest>
  private closedEarly?: () => void
  /** Resolves if the client goes away before it said anything. */
  readonly gone: Promise<void>

  constructor(private readonly inner: Transport) {
    this.first = new Promise((resolve) => (this.firstRequest = resolve))
    this.gone = new Promise((resolve) => (this.closedEarly = resolve))
    inner.onmessage = (message, extra) => {
      if (this.live) return this.onmessage?.(message, extra)
      this.held.push({ message, extra })
      if ('method' in message && 'id' in message) this.firstRequest?.(message as JSONRPCRequest)
    }
    inner.onclose = () => {
      this.closedEarly?.()
      this.onclose?.()
    }
    inner.onerror = (error) => this.onerror?.(error)
  }

  /** Starts the client's transport (stdio: starts reading stdin). */
  open(): Promise<void> {
    return this.inner.start()
  }

  /** The client's first request: its `initialize`, from a well-behaved client. */
  firstRequestSeen(): Promise<JSONRPCRequest> {
    return this.first
  }

  /** Called by Protocol.connect: from now on messages flow, the held ones first. */
  async start(): Promise<void> {
    this.live = true
    for (const h of this.held.splice(0)) this.onmessage?.(h.message, h.extra)
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options)
  }

  close(): Promise<void> {
    return this.inner.close()
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version)
  }
}
