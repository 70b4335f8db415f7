/**
 * The notary's HTTP API (plain node:http), over a NotaryLog:
 *
 *   POST /v1/records                         a signed record → WriteAnswer
 *        201 written · 200 decided (claim/abort lost: the winner in `view`)
 *        409 stale or refused · 403 untrusted or forged · 400 malformed
 *   GET  /v1/effects/:id                     every attempt and the chain's head
 *   GET  /v1/effects/:id/attempts/:n         one attempt: state, records, head
 *   GET  /healthz                            200 when the store answers, else 503
 *   GET  /metrics                            Prometheus text (metrics.ts)
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { NotaryLog, WriteStatus } from './log.js'
import { NotaryMetrics } from './metrics.js'

const STATUS: Record<WriteStatus, number> = { written: 201, decided: 200, stale: 409, refused: 409, untrusted: 403, forged: 403, malformed: 400 }
const EFFECT = /^\/v1\/effects\/([0-9a-f]{64})(?:\/attempts\/([1-9][0-9]{0,6}))?$/
const BODY_LIMIT = 256 * 1024

export interface NotaryServer {
  readonly url: string
  readonly port: number
  readonly metrics: NotaryMetrics
  close(): Promise<void>
}

export async function startNotaryServer(log: NotaryLog, listen: { host?: string; port?: number } = {}): Promise<NotaryServer> {
  const metrics = new NotaryMetrics()
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(metrics.exposition())
      return
    }
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    handle(log, req, metrics)
      .then(([status, body]) => send(status, body))
      .catch((err: unknown) => {
        metrics.storeErrors++
        send(500, { error: 'internal', message: err instanceof Error ? err.message : String(err) })
      })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(listen.port ?? 0, listen.host ?? '127.0.0.1', () => resolve())
  })
  const { port, address } = server.address() as AddressInfo
  const host = address.includes(':') ? `[${address}]` : address
  return {
    url: `http://${host}:${port}`,
    port,
    metrics,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

async function handle(log: NotaryLog, req: http.IncomingMessage, metrics: NotaryMetrics): Promise<[number, unknown]> {
  const path = new URL(req.url ?? '/', 'http://notary').pathname
  if (req.method === 'GET' && path === '/healthz') {
    try {
      await log.effect('0'.repeat(64))
      return [200, { ok: true }]
    } catch (err) {
      metrics.storeErrors++
      return [503, { ok: false, error: err instanceof Error ? err.message : String(err) }]
    }
  }
  if (req.method === 'POST' && path === '/v1/records') {
    let body: unknown
    try {
      body = JSON.parse(await readBody(req))
    } catch {
      return [400, { status: 'malformed', reason: 'the body is not JSON' }]
    }
    const answer = await log.write(body)
    metrics.record((body as { kind?: unknown } | null)?.kind, answer.status)
    return [STATUS[answer.status], answer]
  }
  const m = EFFECT.exec(path)
  if (req.method === 'GET' && m) {
    return [200, m[2] ? await log.attempt(m[1]!, Number(m[2])) : await log.effect(m[1]!)]
  }
  return [404, { error: 'not-found', message: `no route ${req.method} ${path}` }]
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > BODY_LIMIT) reject(new Error('body too large'))
      else chunks.push(c)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}
