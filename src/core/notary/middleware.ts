/**
 * The service side of the notary (docs/notary.md, "What the service must
 * do", the form around the handler): a node:http / Express-compatible
 * middleware. For a request carrying Interlock-Effect and Interlock-Attempt:
 *
 * - `claim` the attempt before the handler runs; a claim the notary refuses
 *   because the agent aborted the attempt is answered `409 {"error":"aborted"}`
 *   and the handler never runs;
 * - an attempt already performed is answered with the recorded result
 *   (`Interlock-Replayed: true`), a failed one with its recorded refusal, and
 *   one claimed but without an outcome (this service died in its handler) with
 *   503: it must not run twice, and only a person can say what it did;
 * - the handler's answer is held back until `performed` (2xx) or `failed`
 *   (4xx: it changed nothing) is written, so an agent that got the answer
 *   finds the same at the notary. A 5xx writes nothing: the outcome is not
 *   known, and the attempt stays CLAIMED (AMBIGUOUS to the agent).
 *
 * Without the notary's answer to the claim nothing is performed (503).
 * Requests without the headers pass straight to the handler.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { JsonObject, JsonValue } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { notaryClient, type NotaryClient } from './client.js'
import { ATTEMPT_HEADER, EFFECT_HEADER, REPLAYED_HEADER } from './headers.js'
import type { AttemptView } from './state.js'

export interface NotaryMiddlewareOptions {
  /** The notary's URL, or a client to it. */
  notary: string | NotaryClient
  /** The service's name as [notary] services trusts it. */
  service: string
  key: Pick<KeyPair, 'seed'>
  timeoutMs?: number
}

export type Next = (err?: unknown) => void
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: Next) => void

export function notaryMiddleware(opts: NotaryMiddlewareOptions): Middleware {
  const client = typeof opts.notary === 'string' ? notaryClient({ url: opts.notary, writer: opts.service, key: opts.key, timeoutMs: opts.timeoutMs }) : opts.notary
  return (req, res, next) => {
    const effect = one(req.headers[EFFECT_HEADER])
    const attemptText = one(req.headers[ATTEMPT_HEADER])
    if (effect === undefined && attemptText === undefined) return next()
    const attempt = Number(attemptText)
    if (!effect || !/^[0-9a-f]{64}$/.test(effect) || !Number.isInteger(attempt) || attempt < 1) {
      return answer(res, 400, { error: 'bad-notary-headers', message: `${EFFECT_HEADER} must be an effect id and ${ATTEMPT_HEADER} a positive integer` })
    }
    notarize(client, effect, attempt, res, next).catch((err: unknown) => {
      if (!res.headersSent) answer(res, 503, { error: 'notary-unreachable', message: err instanceof Error ? err.message : String(err) })
    })
  }
}

/** The middleware around a plain node:http handler. */
export function withNotary(handler: (req: IncomingMessage, res: ServerResponse) => void, opts: NotaryMiddlewareOptions | Middleware) {
  const middleware = typeof opts === 'function' ? opts : notaryMiddleware(opts)
  return (req: IncomingMessage, res: ServerResponse) => middleware(req, res, () => handler(req, res))
}

async function notarize(client: NotaryClient, effect: string, attempt: number, res: ServerResponse, next: Next): Promise<void> {
  const claim = await client.write(effect, attempt, 'claim')
  if (claim.status === 'decided') return replay(res, claim.view!)
  if (claim.status !== 'written') return answer(res, 503, { error: 'notary-refused', status: claim.status, message: claim.reason ?? claim.status })
  hold(res, async (status, body, contentType) => {
    if (status >= 200 && status < 300) await client.write(effect, attempt, 'performed', { status, body, contentType })
    else if (status >= 400 && status < 500) await client.write(effect, attempt, 'failed', { status, body, contentType, reason: reasonOf(body, status) })
  })
  next()
}

function replay(res: ServerResponse, view: AttemptView): void {
  const outcome = view.records.find((r) => r.kind === 'performed' || r.kind === 'failed')
  if (view.state === 'ABORTED') return answer(res, 409, { error: 'aborted', message: `attempt ${view.attempt} of effect ${view.effect} was aborted by the agent` })
  if (!outcome) return answer(res, 503, { error: 'claimed', message: `attempt ${view.attempt} was claimed and has no recorded outcome; it is not performed again` })
  const b = outcome.body as { status?: number; body?: JsonValue; contentType?: string }
  res.writeHead(b.status ?? 200, { 'content-type': b.contentType ?? 'application/json', [REPLAYED_HEADER]: 'true' })
  res.end(typeof b.body === 'string' && !(b.contentType ?? '').includes('json') ? b.body : JSON.stringify(b.body ?? null))
}

/**
 * Holds the handler's answer back (write and end are buffered) until `record`
 * has run with its status and body; then sends it as the handler wrote it.
 * A failure to record still sends the answer: the change is done, and the
 * attempt stays CLAIMED at the notary, which the agent reads as AMBIGUOUS.
 */
function hold(res: ServerResponse, record: (status: number, body: JsonValue, contentType: string) => Promise<void>): void {
  const chunks: Buffer[] = []
  // Headers given to writeHead are not visible to getHeader: keep the content type from there too.
  let writtenType: string | undefined
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse
  res.writeHead = ((...args: unknown[]) => {
    const headers = args.find((a) => a !== null && typeof a === 'object') as Record<string, unknown> | unknown[] | undefined
    writtenType = contentTypeIn(headers) ?? writtenType
    return writeHead(...args)
  }) as typeof res.writeHead
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'))
  }
  res.write = ((chunk: unknown, encoding?: unknown) => {
    keep(chunk, encoding)
    return true
  }) as typeof res.write
  res.end = ((chunk?: unknown, encoding?: unknown) => {
    keep(chunk, encoding)
    const raw = Buffer.concat(chunks)
    const contentType = writtenType ?? String(res.getHeader('content-type') ?? '')
    const text = raw.toString('utf8')
    let body: JsonValue = text
    if (contentType.includes('json')) {
      try {
        body = JSON.parse(text) as JsonValue
      } catch {
        body = text
      }
    }
    record(res.statusCode, body, contentType)
      .catch(() => undefined)
      .finally(() => {
        if (raw.length > 0) write(raw)
        end()
      })
    return res
  }) as typeof res.end
}

function contentTypeIn(headers: Record<string, unknown> | unknown[] | undefined): string | undefined {
  if (!headers) return undefined
  if (Array.isArray(headers)) {
    // The flat [name, value, name, value] form, or [[name, value]] pairs.
    const flat = headers.flat() as unknown[]
    for (let i = 0; i + 1 < flat.length; i += 2) if (String(flat[i]).toLowerCase() === 'content-type') return String(flat[i + 1])
    return undefined
  }
  for (const [name, value] of Object.entries(headers)) if (name.toLowerCase() === 'content-type') return String(value)
  return undefined
}

function reasonOf(body: JsonValue, status: number): string {
  const m = (body as JsonObject | null)?.error
  const text = typeof m === 'string' ? m : typeof (m as JsonObject | null)?.message === 'string' ? String((m as JsonObject).message) : ''
  return text || `answered ${status}`
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}
