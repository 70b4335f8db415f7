/**
 * A small HTTP service with a side effect to count, for the demo and the tests
 * (plain node:http, nothing else).
 *
 *   POST /idempotent   honours Idempotency-Key as Stripe does: the first request
 *                      with a key applies once and its answer is stored; the same
 *                      key again gets the stored answer (header
 *                      `Idempotent-Replayed: true`); the same key while the first
 *                      is unanswered gets 409; the same key with another body 422.
 *   POST /plain        no deduplication: every request applies.
 *   GET  /applied/:id  200 with what applying effect :id answered, 404 if never
 *                      applied (a tier-2 query endpoint).
 *   GET  /counts       applications per Idempotency-Key and per effect id.
 *   GET|PUT /resources/:name   a JSON document to premise on (404 until PUT).
 *   POST /faults {fault, path?, times?} · DELETE /faults   the switchable faults
 *                      below, for a service run in another process.
 *   POST /reset        forget everything.
 *
 * Requests are JSON `{action, args, effect_id}` as HttpTarget sends them; the
 * request log keeps header names only (values may be secrets).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export type ServiceFault =
  /** Close the connection without an answer, after reading the request (and applying it, if afterApply). */
  | { kind: 'drop'; afterApply?: boolean }
  /** Never answer (after applying, if afterApply). */
  | { kind: 'hang'; afterApply?: boolean }
  /** Answer this instead, without applying. */
  | { kind: 'status'; status: number; body?: unknown; retryAfter?: string }

export interface FaultRule {
  fault: ServiceFault
  /** Requests whose path starts with this (default: /idempotent and /plain). */
  path?: string
  /** How many requests it hits before switching itself off (default: until cleared). */
  times?: number
}

export interface RequestRecord {
  method: string
  path: string
  idempotencyKey?: string
  effectId?: string
  headerNames: string[]
}

export interface ServiceCounts {
  /** Applications per Idempotency-Key at /idempotent. */
  idempotent: Record<string, number>
  /** Applications per effect id at /plain. */
  plain: Record<string, number>
}

export interface HttpService {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  readonly url: string
  readonly port: number
  setFault(fault: ServiceFault, options?: Omit<FaultRule, 'fault'>): void
  clearFaults(): void
  counts(): ServiceCounts
  requests(): RequestRecord[]
  setResource(name: string, body: unknown): void
  reset(): void
  close(): Promise<void>
}

interface Stored {
  body: string
  answer?: { status: number; body: unknown }
}

export interface HttpServiceOptions {
  host?: string
  port?: number
  /**
   * Runs around the POST routes (/idempotent, /plain): the notary's
   * middleware (notary/middleware.ts) makes the service a notarized one.
   */
  around?: (req: http.IncomingMessage, res: http.ServerResponse, next: () => void) => void
}

export async function startHttpService(options: HttpServiceOptions = {}): Promise<HttpService> {
  let faults: { fault: ServiceFault; path?: string; times: number }[] = []
  let keys = new Map<string, Stored>()
  let counts: ServiceCounts = { idempotent: {}, plain: {} }
  let applied = new Map<string, unknown>()
  let log: RequestRecord[] = []
  let resources = new Map<string, unknown>()
  let sequence = 0

  const reset = () => {
    faults = []
    keys = new Map()
    counts = { idempotent: {}, plain: {} }
    applied = new Map()
    log = []
    resources = new Map()
  }
  const setFault = (fault: ServiceFault, o: Omit<FaultRule, 'fault'> = {}) => {
    faults.push({ fault, path: o.path, times: o.times ?? Infinity })
  }
  const takeFault = (path: string): ServiceFault | undefined => {
    const rule = faults.find((r) => (r.path ? path.startsWith(r.path) : path.startsWith('/idempotent') || path.startsWith('/plain')))
    if (!rule) return undefined
    rule.times -= 1
    if (rule.times <= 0) faults = faults.filter((r) => r !== rule)
    return rule.fault
  }

  const server = http.createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://service').pathname
    const method = req.method ?? 'GET'
    let raw: string
    try {
      raw = await readBody(req)
    } catch {
      return req.socket.destroy()
    }
    const parsed = parseJson(raw)
    const key = header(req, 'idempotency-key')
    const effectId = parsed && typeof parsed === 'object' && typeof (parsed as { effect_id?: unknown }).effect_id === 'string'
      ? (parsed as { effect_id: string }).effect_id
      : undefined
    log.push({ method, path, idempotencyKey: key, effectId, headerNames: Object.keys(req.headers).sort() })
    const send = (status: number, body: unknown, extra: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...extra })
      res.end(JSON.stringify(body))
    }
    const applyEffect = (endpoint: 'idempotent' | 'plain') => {
      sequence += 1
      const answer = { status: 200, body: { id: `op_${sequence}`, endpoint, effect_id: effectId ?? null } }
      if (endpoint === 'plain' || key === undefined) counts.plain[effectId ?? '(none)'] = (counts.plain[effectId ?? '(none)'] ?? 0) + 1
      else counts.idempotent[key] = (counts.idempotent[key] ?? 0) + 1
      if (effectId) applied.set(effectId, answer.body)
      return answer
    }

    if (method === 'POST' && (path === '/idempotent' || path === '/plain' || path.startsWith('/idempotent/') || path.startsWith('/plain/'))) {
      return options.around ? options.around(req, res, () => void post()) : post()
    }
    async function post() {
      const endpoint = path.startsWith('/idempotent') ? 'idempotent' : 'plain'
      if (endpoint === 'idempotent') {
        if (!key) return send(400, { error: { message: 'Idempotency-Key header is required' } })
        const seen = keys.get(key)
        if (seen && seen.body !== raw) {
          return send(422, { error: { message: 'Keys for idempotent requests can only be used with the same parameters they were first used with' } })
        }
        if (seen?.answer) return send(seen.answer.status, seen.answer.body, { 'idempotent-replayed': 'true' })
        if (seen) return send(409, { error: { message: 'A request with this Idempotency-Key is still in progress' } })
      }
      const fault = takeFault(path)
      if (fault?.kind === 'status') {
        return send(fault.status, fault.body ?? { error: { message: `fault: ${fault.status}` } }, fault.retryAfter ? { 'retry-after': fault.retryAfter } : {})
      }
      const stored: Stored | undefined = endpoint === 'idempotent' ? { body: raw } : undefined
      if (stored) keys.set(key!, stored)
      if (fault && !fault.afterApply) {
        if (stored) keys.delete(key!)
        if (fault.kind === 'drop') req.socket.destroy()
        return
      }
      const answer = applyEffect(endpoint)
      if (fault?.kind === 'hang') return // applied; the key stays in flight
      if (stored) stored.answer = answer
      if (fault?.kind === 'drop') return req.socket.destroy()
      return send(answer.status, answer.body)
    }
    // The POST routes return above; the rest of the routes follow.
    if (method === 'GET' && path.startsWith('/applied/')) {
      const id = decodeURIComponent(path.slice('/applied/'.length))
      return applied.has(id) ? send(200, applied.get(id)) : send(404, { error: { message: `no effect ${id}` } })
    }
    if (method === 'GET' && path === '/counts') return send(200, counts)
    if (path.startsWith('/resources/')) {
      const name = decodeURIComponent(path.slice('/resources/'.length))
      if (method === 'PUT') {
        resources.set(name, parsed)
        return send(200, parsed)
      }
      if (method === 'GET') {
        const fault = takeFault(path)
        if (fault?.kind === 'status') return send(fault.status, fault.body ?? {})
        return resources.has(name) ? send(200, resources.get(name)) : send(404, { error: { message: `no resource ${name}` } })
      }
    }
    if (path === '/faults' && method === 'POST') {
      const rule = parsed as FaultRule
      setFault(rule.fault, { path: rule.path, times: rule.times })
      return send(200, { ok: true })
    }
    if (path === '/faults' && method === 'DELETE') {
      faults = []
      return send(200, { ok: true })
    }
    if (path === '/reset' && method === 'POST') {
      reset()
      return send(200, { ok: true })
    }
    return send(404, { error: { message: `no route ${method} ${path}` } })
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve())
  })
  const { port, address } = server.address() as AddressInfo
  const host = address.includes(':') ? `[${address}]` : address

  return {
    url: `http://${host}:${port}`,
    port,
    setFault,
    clearFaults: () => {
      faults = []
    },
    counts: () => structuredClone(counts),
    requests: () => structuredClone(log),
    setResource: (name, body) => resources.set(name, body),
    reset,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}

function parseJson(raw: string): unknown {
  if (raw === '') return undefined
  try {
    return JSON.parse(raw)
  } catch {
    return undefined
  }
}

function readBody(req: http.IncomingMessage, limit = 1024 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > limit) reject(new Error('request body too large'))
      else chunks.push(c)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}
