/**
 * A TCP link with latency, for a standby "in another zone": every chunk is
 * passed on `lagMs` after it arrived, in order, both ways. `cut()` is the
 * network going down with the primary: the connections are destroyed and
 * what was still on its way is never delivered.
 */
import net from 'node:net'
import type { AddressInfo } from 'node:net'

export interface LaggingLink {
  port: number
  cut(): void
  close(): Promise<void>
}

export async function startLaggingLink(toPort: number, lagMs: number): Promise<LaggingLink> {
  const sockets = new Set<net.Socket>()
  const timers = new Set<NodeJS.Timeout>()
  const pipe = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk) => {
      const t = setTimeout(() => {
        timers.delete(t)
        if (!to.destroyed) to.write(chunk)
      }, lagMs)
      timers.add(t)
    })
    from.on('end', () => {
      const t = setTimeout(() => {
        timers.delete(t)
        to.end()
      }, lagMs)
      timers.add(t)
    })
  }
  const server = net.createServer((client) => {
    const upstream = net.connect(toPort, '127.0.0.1')
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => {
        sockets.delete(s)
        client.destroy()
        upstream.destroy()
      })
    }
    pipe(client, upstream)
    pipe(upstream, client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const cut = () => {
    for (const t of timers) clearTimeout(t)
    timers.clear()
    for (const s of sockets) s.destroy()
  }
  return {
    port: (server.address() as AddressInfo).port,
    cut,
    close: () =>
      new Promise<void>((resolve) => {
        cut()
        server.close(() => resolve())
      }),
  }
}
