/**
 * The service side of the notary for Fastify: the decisions of
 * service-gate.ts mapped onto two hooks, with the same statuses and bodies as
 * the node:http / Express middleware.
 *
 *   await app.register(notaryPlugin, { notary: 'http://notary:7311', service: 'billing', key })
 *
 * - `onRequest` claims the attempt. It is the first hook of a request
 *   (https://fastify.dev/docs/latest/Reference/Lifecycle/), so a refused
 *   claim is answered before the body is parsed and the handler never runs;
 *   an async hook answers with `reply.send()` and `return reply`, which stops
 *   the hook chain (https://fastify.dev/docs/latest/Reference/Hooks/#respond-to-a-request-from-a-hook).
 * - `onSend` receives the serialized payload and the status before anything
 *   is written to the socket (https://fastify.dev/docs/latest/Reference/Hooks/#onsend),
 *   so the answer leaves only after `performed` or `failed` is written.
 *
 * The plugin sets Fastify's `skip-override` property
 * (https://fastify.dev/docs/latest/Reference/Plugins/#handle-the-scope, what
 * fastify-plugin sets) so its hooks apply to the routes of the instance it is
 * registered on, not only to a scope of its own. Registered inside a
 * `register`ed context, it covers that context's routes alone.
 *
 * Nothing here imports fastify: the instance, request and reply are the few
 * members used, declared below, so `agent-interlock/notary` loads without it.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { serviceGate, type NotaryMiddlewareOptions, type Recorder } from './service-gate.js'

/** The members of a Fastify request the plugin reads. */
export interface FastifyRequestLike {
  headers: IncomingHttpHeaders
}

/** The members of a Fastify reply the plugin uses. */
export interface FastifyReplyLike {
  statusCode: number
  code(status: number): FastifyReplyLike
  headers(values: Record<string, string>): FastifyReplyLike
  getHeader(name: string): unknown
  send(payload?: unknown): FastifyReplyLike
}

/** The member of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  addHook(name: 'onRequest', hook: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>): unknown
  addHook(name: 'onSend', hook: (request: FastifyRequestLike, reply: FastifyReplyLike, payload: unknown) => Promise<unknown>): unknown
}

export type NotaryPluginOptions = NotaryMiddlewareOptions

async function plugin(instance: FastifyInstanceLike, opts: NotaryPluginOptions): Promise<void> {
  const gate = serviceGate(opts)
  const pending = new WeakMap<object, Recorder>()
  instance.addHook('onRequest', async (request, reply) => {
    const admission = gate.admit(request.headers)
    if (admission.kind === 'pass') return
    const outcome = admission.kind === 'answer' ? admission : await gate.claim(admission.effect, admission.attempt)
    if (outcome.kind === 'run') {
      pending.set(request, outcome.record)
      return
    }
    reply.code(outcome.answer.status).headers(outcome.answer.headers).send(outcome.answer.body)
    return reply
  })
  instance.addHook('onSend', async (request, reply, payload) => {
    const record = pending.get(request)
    if (!record) return payload
    pending.delete(request)
    // A failure to record still sends the answer: the change is done, and the
    // attempt stays CLAIMED at the notary, which the agent reads as AMBIGUOUS.
    await record(reply.statusCode, textOf(payload), String(reply.getHeader('content-type') ?? '')).catch(() => undefined)
    return payload
  })
}

export const notaryPlugin = Object.assign(plugin, { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'interlock-notary' })

/** onSend's payload is a string or Buffer once serialized; a stream is recorded without its body. */
function textOf(payload: unknown): string {
  if (typeof payload === 'string') return payload
  if (Buffer.isBuffer(payload)) return payload.toString('utf8')
  return ''
}
