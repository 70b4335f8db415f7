/**
 * One HTTP exchange with every timeout applied, for S3: the shared HttpClient
 * (../http/client.ts) with bytes both ways. An object's body may be binary
 * (a base64 `put`, a restored version), so it goes out as bytes and comes back
 * as bytes, not as scrubbed UTF-8 text.
 *
 * The rules are the shared ones (../http/faults.ts, ../http/body.ts): a network
 * failure is a DispatchFault ('not-sent' only when the connection never
 * opened), errors name a request by method and origin only, and `text` is
 * scrubbed of the secrets before a caller can put it in an error or receipt.
 */
import type { Dispatcher } from 'undici'
import type { JsonValue } from '../../canonical-json.js'
import { parseBody, scrub, secretsOf } from '../http/body.js'
import { faultFromError, requestLabel } from '../http/faults.js'
import { fenced, type Fence } from '../http/fence.js'
import { LazyDispatcher, undici } from '../http/lazy-undici.js'

export interface TransportSettings {
  /** Total time for one request, headers and body. */
  timeoutMs: number
  /** Time to establish the connection. */
  connectTimeoutMs: number
}

export interface TransportOptions {
  /** A dispatcher of your own (proxy, test resolver); the client then leaves closing it to you. */
  dispatcher?: Dispatcher
  /** Values to keep out of every text this client hands back (tokens, keys). */
  secrets?: readonly string[]
}

export interface HttpExchange {
  method: string
  url: string
  headers?: Record<string, string>
  body?: string | Uint8Array
  signal?: AbortSignal
  /** Asked right before the request is written (../http/fence.ts); a no aborts it unsent. */
  fence?: Fence
  /** Most bytes of the response body to keep (default 1 MiB); `truncated` says when more came. */
  limit?: number
}

export interface HttpResponse {
  status: number
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>
  /** The body as received (not scrubbed: callers that keep it must not show it). */
  bytes: Buffer
  truncated: boolean
  /** The body as text, scrubbed of secrets. */
  text: string
  /** `text` parsed as JSON when it is JSON, else the text itself; null when empty. */
  body: JsonValue
}

const DEFAULT_LIMIT = 1024 * 1024

export class Transport {
  private readonly dispatcher: LazyDispatcher
  private readonly secrets: string[]

  constructor(
    /** The target's name, for messages. */
    readonly label: string,
    private readonly settings: TransportSettings,
    options: TransportOptions = {},
  ) {
    this.dispatcher = new LazyDispatcher(settings, options.dispatcher)
    this.secrets = secretsOf(options.secrets ?? [])
  }

  async send(x: HttpExchange): Promise<HttpResponse> {
    const deadline = AbortSignal.timeout(this.settings.timeoutMs)
    try {
      const [{ request }, dispatcher] = await Promise.all([undici(), this.dispatcher.get()])
      const res = await request(x.url, {
        method: x.method as Dispatcher.HttpMethod,
        headers: x.headers,
        body: x.body,
        dispatcher: fenced(dispatcher, x.fence, this.where(x.method, x.url)),
        signal: x.signal ? AbortSignal.any([deadline, x.signal]) : deadline,
      })
      const { bytes, truncated } = await readBytes(res.body, x.limit ?? DEFAULT_LIMIT)
      const text = this.scrub(bytes.toString('utf8'))
      return { status: res.statusCode, headers: flatten(res.headers), bytes, truncated, text, body: parseBody(text) }
    } catch (e) {
      throw faultFromError(e, this.where(x.method, x.url))
    }
  }

  scrub(text: string): string {
    return scrub(text, this.secrets)
  }

  /** How errors name a request: method and origin, never the path, query or headers. */
  where(method: string, url: string): string {
    return requestLabel(this.label, method, url)
  }

  close(): Promise<void> {
    return this.dispatcher.close()
  }
}

async function readBytes(
  body: AsyncIterable<Uint8Array> & { destroy?(): unknown },
  limit: number,
): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const buf = Buffer.from(chunk)
    if (size + buf.length > limit) {
      chunks.push(buf.subarray(0, limit - size))
      body.destroy?.()
      return { bytes: Buffer.concat(chunks), truncated: true }
    }
    chunks.push(buf)
    size += buf.length
  }
  return { bytes: Buffer.concat(chunks), truncated: false }
}

function flatten(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v
  return out
}
