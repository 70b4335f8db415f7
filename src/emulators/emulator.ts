/**
 * Local emulators of the remote APIs the targets call (Stripe, GitHub, S3,
 * SendGrid, Slack, Twilio, Jira, Linear) and of a webhook receiver, with the
 * faults real services and networks produce. The tests measure the targets
 * against them (test/emulators re-exports them), and `interlock demo` starts
 * them, so they ship with the package; they are never used against a real
 * service.
 */
/**
 * The common part of every service emulator: an HTTP server on 127.0.0.1, a
 * ledger of applications per effect id (the ground truth tests check, never
 * the journal), and the faults real services and networks produce:
 *
 * - `reset-before-apply`: the connection is reset after the request is read,
 *   before anything is applied (the client cannot tell this from the next one);
 * - `apply-then-drop`: applied, then the connection is closed without an answer;
 * - `reset-after-apply`: applied, then the connection is reset (TCP RST);
 * - `5xx`: answered 500 (or `status`) without applying;
 * - `apply-then-5xx`: applied, then answered 500 (or `status`): a server error
 *   whose outcome is indeterminate;
 * - `hang`: never answered, nothing applied (the client's timeout decides).
 * A subclass words the 5xx as its service does (`injectedError`).
 *
 * An emulator subclass routes requests; a route that changes the world calls
 * `apply(effectId, fn)` so the fault is applied around the change and the
 * ledger counts it.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export type FaultMode = 'reset-before-apply' | 'apply-then-drop' | 'reset-after-apply' | '5xx' | 'apply-then-5xx' | 'hang'

export interface FaultRule {
  mode: FaultMode
  /** Only requests whose method and path match (e.g. 'POST /v1/refunds'); default: any request that applies. */
  route?: string
  /** How many matching requests it hits (default 1). */
  times?: number
  /** Status for '5xx' and 'apply-then-5xx' (default 500). */
  status?: number
}

export interface EmulatorRequest {
  method: string
  path: string
  query: URLSearchParams
  headers: http.IncomingHttpHeaders
  body: string
  /** The body as received, for services whose payloads are bytes (S3 objects, signed payload hashes). */
  raw: Buffer
}

export interface EmulatorResponse {
  status: number
  /** Sent as is when a string or bytes, as JSON otherwise. */
  body?: unknown
  headers?: Record<string, string>
}

/** Thrown by `apply` when a fault swallowed the answer: the route must not answer. */
class Swallowed extends Error {}

export abstract class Emulator {
  /** Applications per effect id. */
  readonly applications = new Map<string, number>()
  /** Faults that struck a request carrying an effect id, per effect id (what a client may have been left unsure of). */
  readonly faultsHit = new Map<string, FaultMode[]>()
  /** Every request received (an Idempotency-Key is an effect id, not a secret: kept for the ledgers). */
  readonly requests: { method: string; path: string; idempotencyKey?: string }[] = []
  private faults: (FaultRule & { left: number })[] = []
  private server?: http.Server
  private readonly hung = new Set<http.ServerResponse>()
  url = ''

  protected abstract route(req: EmulatorRequest): Promise<EmulatorResponse>

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res))
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  async close(): Promise<void> {
    for (const res of this.hung) res.destroy()
    this.server?.closeAllConnections()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }

  fault(rule: FaultRule): void {
    this.faults.push({ ...rule, left: rule.times ?? 1 })
  }

  clearFaults(): void {
    this.faults = []
  }

  count(effectId: string): number {
    return this.applications.get(effectId) ?? 0
  }

  /**
   * Applies a change for `effectId` under the armed fault, if any. `effectId`
   * may be undefined for calls that carry none (they are applied, not counted).
   */
  protected async apply<T>(req: EmulatorRequest, effectId: string | undefined, change: () => T | Promise<T>): Promise<T> {
    const fault = this.takeFault(req)
    if (fault && effectId) this.faultsHit.set(effectId, [...(this.faultsHit.get(effectId) ?? []), fault.mode])
    const res = (req as EmulatorRequest & { res: http.ServerResponse }).res
    if (fault?.mode === 'reset-before-apply') {
      res.socket?.resetAndDestroy()
      throw new Swallowed()
    }
    if (fault?.mode === 'hang') {
      this.hung.add(res)
      throw new Swallowed()
    }
    if (fault?.mode === '5xx') this.answerError(req, res, fault.status ?? 500)
    const result = await change()
    if (effectId) this.applications.set(effectId, this.count(effectId) + 1)
    if (fault?.mode === 'apply-then-5xx') this.answerError(req, res, fault.status ?? 500)
    if (fault?.mode === 'apply-then-drop') {
      res.socket?.end()
      res.socket?.destroy()
      throw new Swallowed()
    }
    if (fault?.mode === 'reset-after-apply') {
      res.socket?.resetAndDestroy()
      throw new Swallowed()
    }
    return result
  }

  /** How the service words an injected server error; a subclass may also save it (Stripe keeps it for the idempotency key). */
  protected injectedError(_req: EmulatorRequest, status: number): EmulatorResponse {
    return { status, body: { error: 'injected server error' } }
  }

  private answerError(req: EmulatorRequest, res: http.ServerResponse, status: number): never {
    const answer = this.injectedError(req, status)
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(JSON.stringify(answer.body))
    throw new Swallowed()
  }

  private takeFault(req: EmulatorRequest): FaultRule | undefined {
    const key = `${req.method} ${req.path}`
    const i = this.faults.findIndex((f) => !f.route || key.startsWith(f.route))
    if (i < 0) return undefined
    const f = this.faults[i]!
    if (--f.left <= 0) this.faults.splice(i, 1)
    return f
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const url = new URL(req.url ?? '/', 'http://emulator')
    const request: EmulatorRequest & { res: http.ServerResponse } = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      raw: Buffer.concat(chunks),
      body: Buffer.concat(chunks).toString('utf8'),
      res,
    }
    const key = req.headers['idempotency-key']
    this.requests.push({ method: request.method, path: request.path, ...(typeof key === 'string' ? { idempotencyKey: key } : {}) })
    try {
      const out = await this.route(request)
      const isJson = out.body !== undefined && typeof out.body !== 'string' && !(out.body instanceof Uint8Array)
      res.writeHead(out.status, { ...(isJson ? { 'content-type': 'application/json' } : {}), ...out.headers })
      res.end(out.body === undefined ? '' : isJson ? JSON.stringify(out.body) : (out.body as string | Uint8Array))
    } catch (e) {
      if (e instanceof Swallowed) return
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(e) }))
    }
  }
}
