import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { toEffect, type Effect } from '../../../src/core/effect.js'
import { ConfigError, DispatchFault, TargetError } from '../../../src/core/errors.js'
import { HttpTarget, type HttpTargetSettings } from '../../../src/core/targets/http/index.js'
import type { ApplyContext } from '../../../src/core/targets/target.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'

const first: ApplyContext = { attempt: 1, recovering: false }
const SECRET = 'sk_live_51ThisIsASecretToken'
let service: HttpService
const targets: HttpTarget[] = []

beforeAll(async () => {
  service = await startHttpService()
})
afterAll(async () => {
  await service.close()
})
afterEach(async () => {
  service.reset()
  for (const t of targets.splice(0)) await t.close()
})

function target(settings: Partial<HttpTargetSettings> & Pick<HttpTargetSettings, 'tier'>, now?: () => number): HttpTarget {
  const t = new HttpTarget(
    'svc',
    { url: `${service.url}/idempotent`, headers: { Authorization: `Bearer ${SECRET}` }, timeoutMs: 2000, connectTimeoutMs: 1000, ...settings },
    { now },
  )
  targets.push(t)
  return t
}

function effect(args: JsonObject = { amount: 5 }, action = 'refund', premises?: JsonObject): Effect {
  return toEffect({ thread: 't1', target: 'svc', action, args, premises })
}

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  const f = e as DispatchFault
  // Header values never reach an error, whatever the service answered.
  expect(`${f.message} ${f.hint ?? ''} ${JSON.stringify(f.toJSON())}`).not.toContain(SECRET)
  return f
}

describe('HttpTarget tier 1', () => {
  it('sends Idempotency-Key = effect id and the canonical body; a retry after a dropped answer reuses the key and applies once', async () => {
    const t = target({ tier: 1 })
    const e = effect()
    service.setFault({ kind: 'drop', afterApply: true }, { times: 1 })
    const lost = await fault(t.apply(e, first))
    expect(lost.kind).toBe('unknown')

    const receipt = await t.apply(e, { attempt: 2, recovering: false })
    expect(receipt.status).toBe(200)
    expect((receipt.body as JsonObject).effect_id).toBe(e.id)
    const sent = service.requests().filter((r) => r.path === '/idempotent')
    expect(sent.map((r) => r.idempotencyKey)).toEqual([e.id, e.id])
    expect(service.counts().idempotent).toEqual({ [e.id]: 1 })
    expect(t.query).toBeUndefined()
  })

  it('a key still in flight answers 409: retry later', async () => {
    const t = target({ tier: 1, timeoutMs: 300 })
    const e = effect()
    service.setFault({ kind: 'hang', afterApply: true }, { times: 1 })
    expect((await fault(t.apply(e, first))).kind).toBe('unknown')
    const busy = await fault(t.apply(e, { attempt: 2, recovering: false }))
    expect(busy.kind).toBe('retry-later')
    expect(busy.message).toMatch(/409/)
    expect(service.counts().idempotent).toEqual({ [e.id]: 1 })
  })
})

describe('HttpTarget tier 2 and 3', () => {
  it('tier 2 queries: 404 is "did not happen", 2xx is the receipt', async () => {
    const t = target({ tier: 2, url: `${service.url}/plain`, queryUrl: `${service.url}/applied/{effect_id}` })
    const e = effect()
    expect(await t.query!(e)).toBeNull()
    await t.apply(e, first)
    const found = await t.query!(e)
    expect(found).toMatchObject({ status: 200, body: { effect_id: e.id, endpoint: 'plain' } })
    expect(service.requests().find((r) => r.path === '/plain')?.idempotencyKey).toBeUndefined()
  })

  it('tier 2 re-apply asks first: an effect whose answer was lost is not applied twice', async () => {
    const t = target({ tier: 2, url: `${service.url}/plain`, queryUrl: `${service.url}/applied/{effect_id}` })
    const e = effect()
    service.setFault({ kind: 'drop', afterApply: true }, { times: 1 })
    expect((await fault(t.apply(e, first))).kind).toBe('unknown')
    expect(await t.apply(e, { attempt: 2, recovering: false })).toMatchObject({ status: 200, body: { effect_id: e.id } })
    expect(service.counts().plain).toEqual({ [e.id]: 1 })
  })

  it('tier 2 without query_url is a config error', () => {
    expect(() => target({ tier: 2, url: `${service.url}/plain` })).toThrow(ConfigError)
  })

  it('tier 3 sends no key and offers no query', async () => {
    const t = target({ tier: 3, url: `${service.url}/plain/{action}?effect={effect_id}`, queryUrl: undefined })
    const e = effect({ amount: 1 }, 'notify/user@x')
    await t.apply(e, first)
    const [req] = service.requests()
    expect(req).toMatchObject({ path: '/plain/notify%2Fuser%40x', effectId: e.id })
    expect(req!.idempotencyKey).toBeUndefined()
    expect(req!.headerNames).toContain('authorization')
    expect(t.query).toBeUndefined()
  })
})

describe('HttpTarget fault classes', () => {
  it('refused connection: not sent', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const f = await fault(target({ tier: 1, url: `http://127.0.0.1:${port}/idempotent` }).apply(effect(), first))
    expect(f.kind).toBe('not-sent')
    expect(f.message).toContain('ECONNREFUSED')
  })

  it('a server that reads the request and drops the connection: unknown', async () => {
    service.setFault({ kind: 'drop' })
    const f = await fault(target({ tier: 3, url: `${service.url}/plain` }).apply(effect(), first))
    expect(f.kind).toBe('unknown')
    expect(service.requests()).toHaveLength(1)
  })

  it('a server that hangs: unknown, after the timeout', async () => {
    service.setFault({ kind: 'hang' })
    const started = Date.now()
    const f = await fault(target({ tier: 3, url: `${service.url}/plain`, timeoutMs: 300 }).apply(effect(), first))
    expect(f.kind).toBe('unknown')
    expect(f.message).toMatch(/timed out/)
    expect(Date.now() - started).toBeGreaterThanOrEqual(250)
    expect(Date.now() - started).toBeLessThan(2000)
  })

  it('500: unknown', async () => {
    service.setFault({ kind: 'status', status: 500, body: { error: { message: 'database down' } } })
    const f = await fault(target({ tier: 1 }).apply(effect(), first))
    expect(f.kind).toBe('unknown')
    expect(f.message).toContain('database down')
  })

  it('400: refused, with the service\'s message', async () => {
    service.setFault({ kind: 'status', status: 400, body: { error: { message: 'Amount must be at least 50 cents' } } })
    const f = await fault(target({ tier: 1 }).apply(effect(), first))
    expect(f.kind).toBe('refused')
    expect(f.message).toContain('Amount must be at least 50 cents')
    expect(f.context.status).toBe(400)
  })

  it('412: premise', async () => {
    service.setFault({ kind: 'status', status: 412, body: { message: 'head moved' } })
    expect((await fault(target({ tier: 1 }).apply(effect(), first))).kind).toBe('premise')
  })

  it('429 with Retry-After in seconds or as a date: retry later, with the delay', async () => {
    service.setFault({ kind: 'status', status: 429, retryAfter: '7' }, { times: 1 })
    const f = await fault(target({ tier: 3, url: `${service.url}/plain` }).apply(effect(), first))
    expect(f.kind).toBe('retry-later')
    expect(f.retryAfterMs).toBe(7000)

    const now = Date.parse('2025-01-01T00:00:00Z')
    service.setFault({ kind: 'status', status: 429, retryAfter: 'Wed, 01 Jan 2025 00:00:30 GMT' }, { times: 1 })
    const g = await fault(target({ tier: 3, url: `${service.url}/plain` }, () => now).apply(effect(), first))
    expect(g.retryAfterMs).toBe(30_000)
  })

  it('403 with Retry-After: the service says "not now", retry later; a 403 without it stays refused', async () => {
    service.setFault({ kind: 'status', status: 403, retryAfter: '90', body: { message: 'You have exceeded a secondary rate limit.' } }, { times: 1 })
    const f = await fault(target({ tier: 3, url: `${service.url}/plain` }).apply(effect(), first))
    expect(f).toMatchObject({ kind: 'retry-later', retryAfterMs: 90_000 })

    service.setFault({ kind: 'status', status: 403, body: { message: 'Forbidden: this key may not charge' } }, { times: 1 })
    const g = await fault(target({ tier: 3, url: `${service.url}/plain` }).apply(effect(), first))
    expect(g.kind).toBe('refused')
  })

  it('never lets a header value into an error or a receipt, even when the service echoes it', async () => {
    service.setFault({ kind: 'status', status: 401, body: { error: { message: `bad key Bearer ${SECRET}` } } }, { times: 1 })
    const f = await fault(target({ tier: 1 }).apply(effect(), first))
    expect(f.kind).toBe('refused')
    expect(f.message).toContain('[redacted]')

    service.setFault({ kind: 'status', status: 200, body: { echoed: `Bearer ${SECRET}` } }, { times: 1 })
    const receipt = await target({ tier: 3, url: `${service.url}/plain` }).apply(effect(), first)
    expect(JSON.stringify(receipt)).not.toContain(SECRET)
  })

  it('names a request by method and origin only: a path may be a secret too', async () => {
    service.setFault({ kind: 'status', status: 403, body: { message: 'no' } })
    const f = await fault(target({ tier: 3, url: `${service.url}/plain/T0001/B0001/hooksecretpath` }).apply(effect(), first))
    expect(f.message).toContain(`POST ${service.url}`)
    expect(f.message).not.toContain('hooksecretpath')
  })
})

describe('HttpTarget premises', () => {
  it('captures the premise resource and compares it again', async () => {
    const t = target({ tier: 1, premiseUrl: `${service.url}/resources/{args.order}` })
    service.setResource('o-1', { status: 'paid', amount: 500, note: 'x' })
    const args = { order: 'o-1', amount: 5 }
    const premises = await t.capture('refund', args)
    expect(premises).toMatchObject({ resource: { sha256: expect.stringMatching(/^[0-9a-f]{64}$/), body: { status: 'paid' } } })
    const e = effect(args, 'refund', premises)
    expect(await t.validatePremises(e)).toEqual([])

    service.setResource('o-1', { status: 'refunded', amount: 500, note: 'x' })
    expect(await t.validatePremises(e)).toEqual([expect.stringMatching(/^the premise resource changed since the decision \(fields: status\)/)])
    service.reset()
    expect(await t.validatePremises(e)).toEqual(['the premise resource is gone (404)'])
  })

  it('cannot check now is an error, not a verdict; no premise_url means nothing to capture', async () => {
    const t = target({ tier: 1, premiseUrl: `${service.url}/resources/doc` })
    service.setResource('doc', { v: 1 })
    const e = effect({}, 'refund', await t.capture('refund', {}))
    service.setFault({ kind: 'status', status: 503 }, { path: '/resources/', times: 1 })
    await expect(t.validatePremises(e)).rejects.toThrow(TargetError)
    expect(await target({ tier: 1 }).capture('refund', {})).toEqual({})
    expect(await target({ tier: 1 }).validatePremises(e)).toEqual([expect.stringContaining('has no premise_url')])
  })
})
