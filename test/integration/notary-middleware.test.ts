/**
 * The notary's service side in front of the demo's /plain route, driven by
 * plain requests: what a service answers for each state of an attempt
 * (docs/notary.md, "What the service must do"). One table, run against each
 * form a service adds: the middleware under node:http and under Express, and
 * the Fastify plugin, answer alike.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { sha256Hex } from '../../src/core/hash.js'
import { notaryClient } from '../../src/core/notary/client.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import { notaryMiddleware } from '../../src/core/notary/middleware.js'
import { startNotaryServer, type NotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { startExpressService } from '../helpers/express-service.js'
import { startFastifyService } from '../helpers/fastify-service.js'
import { startHttpService } from '../helpers/http-service.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('service', 'svc')
let dir = ''
let log: NotaryLog
let notary: NotaryServer

/** What the table needs of a service: where it is, what it applied, a refusal to stage. */
interface Service {
  url: string
  counts(): { plain: Record<string, number> }
  setFault(fault: { kind: 'status'; status: number; body?: unknown }, options?: { times?: number }): void
  close(): Promise<void>
}
type Options = Parameters<typeof notaryMiddleware>[0]
const FORMS: { form: string; start: (opts: Options) => Promise<Service> }[] = [
  { form: 'node:http middleware', start: (opts) => startHttpService({ around: notaryMiddleware(opts) }) },
  { form: 'Express middleware', start: (opts) => startExpressService({ notary: opts }) },
  { form: 'Fastify plugin', start: (opts) => startFastifyService({ notary: opts }) },
]

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-notary-mw-'))
  log = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } })
  notary = await startNotaryServer(log)
})
afterAll(async () => {
  await log?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

let n = 0
const newEffect = () => sha256Hex(`mw-${process.pid}-${++n}`)
const post = (base: string, effect: string | undefined, attempt: string | undefined) =>
  fetch(`${base}/plain`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(effect ? { 'interlock-effect': effect } : {}), ...(attempt ? { 'interlock-attempt': attempt } : {}) },
    body: JSON.stringify({ action: 'charge', args: {}, effect_id: effect ?? 'none' }),
  })

describe.each(FORMS)('the notary in front of a service: $form', ({ start }) => {
  let svc: Service
  let cutOff: Service
  beforeAll(async () => {
    svc = await start({ notary: notary.url, service: 'svc', key: service })
    cutOff = await start({ notary: 'http://127.0.0.1:9', service: 'svc', key: service, timeoutMs: 500 })
  })
  afterAll(async () => {
    await svc?.close()
    await cutOff?.close()
  })

  it('performs once: claim, then performed with the answer; the same attempt again is replayed from the record, not performed', async () => {
    const e = newEffect()
    const first = await post(svc.url, e, '1')
    expect(first.status).toBe(200)
    const body = await first.json()
    const view = await log.attempt(e, 1)
    expect(view.state).toBe('PERFORMED')
    expect(view.records.at(-1)!.body).toMatchObject({ status: 200, body })
    const again = await post(svc.url, e, '1')
    expect(again.status).toBe(200)
    expect(again.headers.get('interlock-replayed')).toBe('true')
    expect(await again.json()).toEqual(body)
    expect(svc.counts().plain[e]).toBe(1)
  })

  it('an attempt the agent aborted is answered 409 aborted and nothing is performed', async () => {
    const e = newEffect()
    const client = notaryClient({ url: notary.url, writer: 'agent-1', key: agent })
    await client.write(e, 1, 'intend')
    expect((await client.write(e, 1, 'abort')).status).toBe('written')
    const late = await post(svc.url, e, '1')
    expect(late.status).toBe(409)
    expect(await late.json()).toMatchObject({ error: 'aborted' })
    expect(svc.counts().plain[e]).toBeUndefined()
  })

  it('a refusal (4xx) is recorded as failed and replayed as such', async () => {
    const e = newEffect()
    svc.setFault({ kind: 'status', status: 402, body: { error: { message: 'card declined' } } }, { times: 1 })
    expect((await post(svc.url, e, '1')).status).toBe(402)
    const view = await log.attempt(e, 1)
    expect(view.state).toBe('FAILED')
    expect(view.records.at(-1)!.body).toMatchObject({ status: 402, reason: 'card declined' })
    const again = await post(svc.url, e, '1')
    expect(again.status).toBe(402)
    expect(again.headers.get('interlock-replayed')).toBe('true')
  })

  it('without the notary\'s answer to the claim it performs nothing (503)', async () => {
    const e = newEffect()
    const res = await post(cutOff.url, e, '1')
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({ error: 'notary-unreachable' })
    expect(cutOff.counts().plain[e]).toBeUndefined()
  })

  it('a 5xx from the handler records nothing: the attempt stays CLAIMED and is answered 503 claimed, not run again', async () => {
    const e = newEffect()
    svc.setFault({ kind: 'status', status: 500, body: { error: { message: 'boom' } } }, { times: 1 })
    expect((await post(svc.url, e, '1')).status).toBe(500)
    expect((await log.attempt(e, 1)).state).toBe('CLAIMED')
    const again = await post(svc.url, e, '1')
    expect(again.status).toBe(503)
    expect(await again.json()).toMatchObject({ error: 'claimed' })
    expect(svc.counts().plain[e]).toBeUndefined()
  })

  it('a request without the headers passes straight through, recording nothing; malformed headers are refused with 400', async () => {
    const before = svc.counts().plain['none'] ?? 0
    const plain = await post(svc.url, undefined, undefined)
    expect(plain.status).toBe(200)
    expect(plain.headers.get('interlock-replayed')).toBeNull()
    expect(svc.counts().plain['none']).toBe(before + 1)
    expect((await post(svc.url, 'not-an-id', '1')).status).toBe(400)
    expect((await post(svc.url, newEffect(), '0')).status).toBe(400)
  })
})
