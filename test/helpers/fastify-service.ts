/**
 * The demo service's /plain route (src/core/demo/http-service.ts) served by
 * Fastify: no deduplication, every request applies and is counted per effect
 * id; a `status` fault answers without applying. With `notary`, the notary's
 * Fastify plugin is registered in front of it, the one line a Fastify service adds.
 */
import Fastify from 'fastify'
import type { ServiceCounts, ServiceFault } from '../../src/core/demo/http-service.js'
import { notaryPlugin, type NotaryPluginOptions } from '../../src/core/notary/fastify.js'

export interface FastifyService {
  readonly url: string
  counts(): ServiceCounts
  setFault(fault: Extract<ServiceFault, { kind: 'status' }>, options?: { times?: number }): void
  close(): Promise<void>
}

export async function startFastifyService(options: { notary?: NotaryPluginOptions } = {}): Promise<FastifyService> {
  const app = Fastify()
  if (options.notary) await app.register(notaryPlugin, options.notary)
  const counts: ServiceCounts = { idempotent: {}, plain: {} }
  let faults: { fault: Extract<ServiceFault, { kind: 'status' }>; times: number }[] = []
  let sequence = 0
  app.post('/plain', async (request, reply) => {
    const rule = faults[0]
    if (rule) {
      if (--rule.times <= 0) faults = faults.slice(1)
      return reply.code(rule.fault.status).send(rule.fault.body ?? { error: { message: `fault: ${rule.fault.status}` } })
    }
    const body = request.body as { effect_id?: unknown } | undefined
    const effectId = typeof body?.effect_id === 'string' ? body.effect_id : '(none)'
    counts.plain[effectId] = (counts.plain[effectId] ?? 0) + 1
    sequence += 1
    return { id: `op_${sequence}`, endpoint: 'plain', effect_id: effectId }
  })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  return {
    url: address,
    counts: () => structuredClone(counts),
    setFault: (fault, o = {}) => {
      faults.push({ fault, times: o.times ?? Infinity })
    },
    close: () => app.close(),
  }
}
