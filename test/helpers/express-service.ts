/**
 * The demo service's /plain route (src/core/demo/http-service.ts) served by
 * Express 5: no deduplication, every request applies and is counted per
 * effect id; a `status` fault answers without applying. With `notary`, the
 * notary's middleware is `app.use`d in front of it, the one line an Express
 * service adds (Express takes node:http's `(req, res, next)` middleware as is).
 */
import type { AddressInfo } from 'node:net'
import express from 'express'
import type { ServiceCounts, ServiceFault } from '../../src/core/demo/http-service.js'
import { notaryMiddleware, type NotaryMiddlewareOptions } from '../../src/core/notary/middleware.js'

export interface ExpressService {
  readonly url: string
  counts(): ServiceCounts
  setFault(fault: Extract<ServiceFault, { kind: 'status' }>, options?: { times?: number }): void
  close(): Promise<void>
}

export async function startExpressService(options: { notary?: NotaryMiddlewareOptions } = {}): Promise<ExpressService> {
  const app = express()
  if (options.notary) app.use(notaryMiddleware(options.notary))
  app.use(express.json())
  const counts: ServiceCounts = { idempotent: {}, plain: {} }
  let faults: { fault: Extract<ServiceFault, { kind: 'status' }>; times: number }[] = []
  let sequence = 0
  app.post('/plain', (req, res) => {
    const rule = faults[0]
    if (rule) {
      if (--rule.times <= 0) faults = faults.slice(1)
      res.status(rule.fault.status).json(rule.fault.body ?? { error: { message: `fault: ${rule.fault.status}` } })
      return
    }
    const body = req.body as { effect_id?: unknown } | undefined
    const effectId = typeof body?.effect_id === 'string' ? body.effect_id : '(none)'
    counts.plain[effectId] = (counts.plain[effectId] ?? 0) + 1
    sequence += 1
    res.json({ id: `op_${sequence}`, endpoint: 'plain', effect_id: effectId })
  })
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(s)))
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => structuredClone(counts),
    setFault: (fault, o = {}) => {
      faults.push({ fault, times: o.times ?? Infinity })
    },
    close: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  }
}
