/**
 * The service the randomized schedules dispatch to: one emulator (with the
 * emulators' fault modes: apply-then-drop, reset before/after apply, 5xx,
 * hang) serving the three tiers as the HTTP target speaks them, and counting
 * applications per effect id: the ground truth the invariants read.
 *
 *   POST /idempotent   tier 1: Idempotency-Key dedupes (a replay applies nothing)
 *   POST /plain        tiers 2 and 3: every request applies
 *   GET  /applied/:id  tier 2's query: 200 when applied, 404 when not
 *   GET|PUT /resources/:name   a document to premise on
 *
 * The count is per effect id from the body, not per key: a retry under a new
 * key (negative control b) shows as a second application.
 */
import { Emulator, type EmulatorRequest, type EmulatorResponse } from '../../src/emulators/emulator.js'

export class LedgerService extends Emulator {
  private readonly answers = new Map<string, unknown>()
  private readonly applied = new Map<string, unknown>()
  private readonly resources = new Map<string, unknown>()
  private seq = 0

  setResource(name: string, body: unknown): void {
    this.resources.set(name, body)
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    const { method, path } = req
    if (method === 'POST' && (path === '/idempotent' || path === '/plain')) {
      const body = JSON.parse(req.body || '{}') as { effect_id?: string }
      const effectId = body.effect_id
      const key = req.headers['idempotency-key']
      if (path === '/idempotent') {
        if (typeof key !== 'string') return { status: 400, body: { error: 'Idempotency-Key required' } }
        if (this.answers.has(key)) return { status: 200, body: this.answers.get(key), headers: { 'idempotent-replayed': 'true' } }
      }
      // The key is saved in the same step as the change: a fault before it leaves neither.
      const answer = await this.apply(req, effectId, () => {
        const a = { id: `op_${++this.seq}`, effect_id: effectId ?? null }
        if (path === '/idempotent') this.answers.set(key as string, a)
        if (effectId) this.applied.set(effectId, a)
        return a
      })
      return { status: 200, body: answer }
    }
    if (method === 'GET' && path.startsWith('/applied/')) {
      const id = decodeURIComponent(path.slice('/applied/'.length))
      return this.applied.has(id) ? { status: 200, body: this.applied.get(id) } : { status: 404, body: { error: 'not applied' } }
    }
    if (path.startsWith('/resources/')) {
      const name = decodeURIComponent(path.slice('/resources/'.length))
      if (method === 'PUT') {
        this.resources.set(name, JSON.parse(req.body))
        return { status: 200, body: {} }
      }
      return this.resources.has(name) ? { status: 200, body: this.resources.get(name) } : { status: 404, body: {} }
    }
    return { status: 404, body: { error: `no route ${method} ${path}` } }
  }
}
