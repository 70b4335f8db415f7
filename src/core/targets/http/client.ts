/**
 * The shared HTTP client of the targets that speak HTTP: one request with a
 * connect timeout and a total timeout, network failures as DispatchFaults
 * (faults.ts), and response bodies scrubbed of secrets (body.ts).
 *
 * Header values may carry secrets, so errors name a request by method and
 * origin only (a path can hold a token too: webhook URLs) and bodies are
 * scrubbed of header values before they reach an error or a receipt.
 */
import type { Dispatcher } from 'undici'
import { parseBody, readLimited, scrub, scrubValue, secretsOf } from './body.js'
import { faultFromError, requestLabel, type Answer } from './faults.js'
import { fenced, guardOf, type RequestGuard } from './fence.js'
import { LazyDispatcher, undici } from './lazy-undici.js'

export interface HttpClientSettings {
  /** Headers sent with every request; their values are treated as secrets. */
  headers?: Record<string, string>
  /** Total time for one request, headers and body, in milliseconds. */
  timeoutMs: number
  /** Time to establish the connection, in milliseconds. */
  connectTimeoutMs: number
}

export interface HttpClientOptions {
  /** A dispatcher of your own (proxy, mock); the client then leaves closing it to you. */
  dispatcher?: Dispatcher
  /** More values to keep out of errors and receipts (config `secrets`). */
  secrets?: readonly string[]
  /** For Retry-After dates; default Date.now. */
  now?: () => number
}

export interface HttpAnswer extends Answer {
  /** The body text, scrubbed. */
  text: string
  /** Response headers: lower-case names, the first value of each (Stripe's Idempotent-Replayed, SendGrid's X-Message-Id). */
  headers: Record<string, string>
}

export class HttpClient {
  private readonly dispatcher: LazyDispatcher
  private readonly secrets: string[]
  private readonly headers: Record<string, string>
  readonly now: () => number

  constructor(
    readonly name: string,
    private readonly settings: HttpClientSettings,
    options: HttpClientOptions = {},
  ) {
    this.headers = { ...(settings.headers ?? {}) }
    this.dispatcher = new LazyDispatcher(settings, options.dispatcher)
    this.secrets = secretsOf([...Object.values(this.headers), ...(options.secrets ?? [])])
    this.now = options.now ?? Date.now
  }

  /**
   * One request with every timeout applied; network failures come back as
   * DispatchFaults. An apply passes its ApplyContext as `guard`: its fence is
   * asked right before the request is written (fence.ts).
   */
  async send(method: string, url: string, extra: Record<string, string> = {}, body?: string, guard?: AbortSignal | RequestGuard): Promise<HttpAnswer> {
    // A User-Agent, which some APIs require (GitHub refuses a request without one); configured headers override it.
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'interlock' }
    const overridden = new Set(Object.keys(extra).map((k) => k.toLowerCase()))
    for (const [k, v] of Object.entries(this.headers)) if (!overridden.has(k.toLowerCase())) headers[k] = v
    Object.assign(headers, extra)
    const deadline = AbortSignal.timeout(this.settings.timeoutMs)
    const where = this.where(method, url)
    const { signal, fence } = guardOf(guard)
    try {
      const [{ request }, dispatcher] = await Promise.all([undici(), this.dispatcher.get()])
      const res = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        dispatcher: fenced(dispatcher, fence, where),
        signal: signal ? AbortSignal.any([deadline, signal]) : deadline,
      })
      const raw = await readLimited(res.body)
      const flat: Record<string, string> = {}
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k.toLowerCase()] = Array.isArray(v) ? v[0]! : v
      // Parsed before it is scrubbed: a secret JSON-escaped in the text is the plain secret in the body.
      return { status: res.statusCode, text: scrub(raw, this.secrets), body: scrubValue(parseBody(raw), this.secrets), retryAfter: flat['retry-after'], headers: flat }
    } catch (e) {
      throw faultFromError(e, where)
    }
  }

  /** How errors name a request: method and origin, never the path, query or headers. */
  where(method: string, url: string): string {
    return requestLabel(this.name, method, url)
  }

  /** Idempotent: a target may be closed by its gate and by whoever made it. */
  close(): Promise<void> {
    return this.dispatcher.close()
  }
}
