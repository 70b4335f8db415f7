/**
 * The service side of the notary for node:http and Express: the decisions of
 * service-gate.ts (docs/notary.md, "What the service must do") mapped onto a
 * `(req, res, next)` middleware. The handler's answer is held back (writeHead,
 * write and end are buffered) until its `performed` or `failed` is written,
 * so an agent that got the answer finds the same at the notary.
 * Requests without the headers pass straight to the handler.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { serviceGate, type GateAnswer, type NotaryMiddlewareOptions, type Recorder } from './service-gate.js'

export type { NotaryMiddlewareOptions } from './service-gate.js'
export type Next = (err?: unknown) => void
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: Next) => void

export function notaryMiddleware(opts: NotaryMiddlewareOptions): Middleware {
  const gate = serviceGate(opts)
  return (req, res, next) => {
    const admission = gate.admit(req.headers)
    if (admission.kind === 'pass') return next()
    if (admission.kind === 'answer') return send(res, admission.answer)
    gate
      .claim(admission.effect, admission.attempt)
      .then((outcome) => {
        if (outcome.kind === 'answer') return send(res, outcome.answer)
        hold(res, outcome.record)
        next()
      })
      // A handler that throws: a 500 goes out through the hold, which records nothing for it (outcome unknown).
      .catch(() => send(res, { status: 500, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 'handler-failed' }) }))
  }
}

/** The middleware around a plain node:http handler. */
export function withNotary(handler: (req: IncomingMessage, res: ServerResponse) => void, opts: NotaryMiddlewareOptions | Middleware) {
  const middleware = typeof opts === 'function' ? opts : notaryMiddleware(opts)
  return (req: IncomingMessage, res: ServerResponse) => middleware(req, res, () => handler(req, res))
}

/**
 * Holds the handler's answer back (write and end are buffered) until `record`
 * has run with its status and body; then sends it as the handler wrote it.
 * A failure to record still sends the answer: the change is done, and the
 * attempt stays CLAIMED at the notary, which the agent reads as AMBIGUOUS.
 */
function hold(res: ServerResponse, record: Recorder): void {
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
    record(res.statusCode, raw.toString('utf8'), contentType)
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

function send(res: ServerResponse, answer: GateAnswer): void {
  if (res.headersSent) return
  res.writeHead(answer.status, answer.headers)
  res.end(answer.body)
}
