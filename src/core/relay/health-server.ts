/**
 * `/healthz` and `/metrics` for a relay, on 127.0.0.1 by default: plain
 * node:http, so a systemd watchdog or a Prometheus scraper on the host can
 * ask without any exposure beyond it.
 *
 * /healthz answers 200 while the relay runs and its store answered recently,
 * 503 when it is draining or the store has been failing for longer than a
 * lease (what it claims could not be worked on).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface HealthSource {
  health(): { ok: boolean; body: Record<string, unknown> }
  metrics(): string
}

export interface HealthServer {
  readonly port: number
  close(): Promise<void>
}

export async function startHealthServer(source: HealthSource, port: number, host = '127.0.0.1'): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://relay').pathname
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end()
      return
    }
    if (path === '/healthz') {
      const h = source.health()
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(h.body))
      return
    }
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(source.metrics())
      return
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /healthz or /metrics\n')
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
