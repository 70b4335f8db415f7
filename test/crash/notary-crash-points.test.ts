/**
 * What the notary buys (docs/notary.md): the demo's HTTP service, its /plain
 * route a tier-3 target, once behind the notary's middleware and reached
 * through notarized(target), once plain. A child process submits one effect
 * and is SIGKILLed at each crash point; this process recovers and judges by
 * the service's own count of applications.
 *
 * Notarized: every point ends COMMITTED, applied exactly once, never
 * AMBIGUOUS while the notary answers. Plain: the points between DISPATCHED
 * and COMMITTED end AMBIGUOUS, as tier 3 always did. Then the stated safe
 * states: the notary unreachable at recovery (AMBIGUOUS), an answer whose
 * service signature does not verify (AMBIGUOUS), the service dying in its
 * handler after its claim (AMBIGUOUS: the window the middleware form leaves).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { CRASH_ENV, type CrashPoint } from '../../src/core/crash-points.js'
import { toBase64Url } from '../../src/core/crypto/encoding.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { toEffect, type EffectInput } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { notaryClient } from '../../src/core/notary/client.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import { notaryMiddleware } from '../../src/core/notary/middleware.js'
import { notarized } from '../../src/core/notary/notarized.js'
import { startNotaryServer, type NotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTarget } from '../../src/core/targets/registry.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { runTsChild } from '../helpers/child.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import type { NotaryChildPlan } from './notary-child.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('relay', 'svc')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } }

let dir = ''
let log: NotaryLog
let notary: NotaryServer
let notarizedService: HttpService
let plainService: HttpService

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-notary-crash-'))
  log = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), trusted)
  notary = await startNotaryServer(log)
  notarizedService = await startHttpService({ around: notaryMiddleware({ notary: notary.url, service: 'svc', key: service }) })
  plainService = await startHttpService()
})
afterAll(async () => {
  await notarizedService?.close()
  await plainService?.close()
  await notary?.close()
  await log?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const storeConfig = (): StoreConfig => ({ kind: 'sqlite', path: join(dir, 'journal.db') })
const tier3 = (svc: HttpService): TargetConfig => ({ type: 'http', tier: 3, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000, url: `${svc.url}/plain` })
const applications = (svc: HttpService, id: string) => svc.counts().plain[id] ?? 0

function agentTarget(svc: HttpService, opts: { notaryUrl?: string; services?: Record<string, string> } = {}): EffectTarget {
  const inner = createTarget('svc', tier3(svc))
  if (!opts.notaryUrl) return inner
  return notarized(inner, { notary: notaryClient({ url: opts.notaryUrl, writer: 'agent-1', key: agent }), services: opts.services ?? trusted.services })
}

async function killAt(point: CrashPoint, input: EffectInput, withNotary: boolean, name: string): Promise<void> {
  const svc = withNotary ? notarizedService : plainService
  const plan: NotaryChildPlan = {
    store: storeConfig(),
    name: 'svc',
    target: tier3(svc),
    effects: [input],
    ...(withNotary ? { notary: { url: notary.url, agent: 'agent-1', seed: toBase64Url(agent.seed), services: trusted.services } } : {}),
  }
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify(plan))
  const run = await runTsChild('test/crash/notary-child.ts', [file], { [CRASH_ENV]: point })
  expect(run.signal, run.stderr).toBe('SIGKILL')
}

async function recoverWith(target: EffectTarget, id: string) {
  const store = await openStore(storeConfig())
  const gate = new Gate({ store, targets: [target], retry: { maxAttempts: 3, backoffMs: 10 } })
  try {
    await gate.recover()
    const state = (await store.get(id))?.state
    return { state, store, gate }
  } catch (err) {
    await gate.close()
    await store.close()
    throw err
  }
}

const NOTARIZED_POINTS: CrashPoint[] = ['after-dispatched', 'after-intend', 'after-apply', 'after-committed']
const IN_FLIGHT: CrashPoint[] = ['after-dispatched', 'after-apply']

describe('a tier-3 service behind the notary, its agent killed at each crash point', () => {
  it.each(NOTARIZED_POINTS)('killed %s: recovery asks the notary and ends COMMITTED, applied exactly once, never AMBIGUOUS', async (point) => {
    const input = { thread: `notary-${point}`, target: 'svc', action: 'charge', args: { amount: '1.00' } }
    const id = toEffect(input).id
    await killAt(point, input, true, `notarized-${point}`)
    const { state, store, gate } = await recoverWith(agentTarget(notarizedService, { notaryUrl: notary.url }), id)
    try {
      expect(state).toBe('COMMITTED')
      expect(applications(notarizedService, id)).toBe(1)
      const attempts = (await log.effect(id)).attempts.map((a) => a.state)
      // Killed before the service claimed: the attempt was aborted and the next one performed; after: attempt 1 performed.
      expect(attempts).toEqual(point === 'after-dispatched' || point === 'after-intend' ? ['ABORTED', 'PERFORMED'] : ['PERFORMED'])
      expect(await log.verify(id)).toEqual([])
      // A second recovery and a reconcile pass change nothing and apply nothing.
      await gate.recover()
      await reconcileEffects({ store, storeConfig: storeConfig(), targets: [agentTarget(notarizedService, { notaryUrl: notary.url })], olderThanMs: 0, concurrency: 1 })
      expect((await store.get(id))!.state).toBe('COMMITTED')
      expect(applications(notarizedService, id)).toBe(1)
    } finally {
      await gate.close()
      await store.close()
    }
  })

  it('a request of an aborted attempt arriving late is refused by the service (409 aborted) and applies nothing', async () => {
    const input = { thread: 'notary-late', target: 'svc', action: 'charge', args: { amount: '3.00' } }
    const id = toEffect(input).id
    await killAt('after-intend', input, true, 'notarized-late')
    const { state, store, gate } = await recoverWith(agentTarget(notarizedService, { notaryUrl: notary.url }), id)
    try {
      expect(state).toBe('COMMITTED')
      // Attempt 1's request, held up somewhere, arrives now.
      const late = await fetch(`${notarizedService.url}/plain`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'interlock-effect': id, 'interlock-attempt': '1' },
        body: JSON.stringify({ action: 'charge', args: input.args, effect_id: id }),
      })
      expect(late.status).toBe(409)
      expect(await late.json()).toMatchObject({ error: 'aborted' })
      expect(applications(notarizedService, id)).toBe(1)
    } finally {
      await gate.close()
      await store.close()
    }
  })
})

describe('the same tier-3 service without the notary', () => {
  it.each(IN_FLIGHT)('killed %s: recovery cannot know and marks it AMBIGUOUS', async (point) => {
    const input = { thread: `plain-${point}`, target: 'svc', action: 'charge', args: { amount: '1.00' } }
    const id = toEffect(input).id
    await killAt(point, input, false, `plain-${point}`)
    const { state, store, gate } = await recoverWith(agentTarget(plainService), id)
    try {
      expect(state).toBe('AMBIGUOUS')
      expect(applications(plainService, id)).toBe(point === 'after-apply' ? 1 : 0)
    } finally {
      await gate.close()
      await store.close()
    }
  })
})

describe('safe states when the notary cannot settle it', () => {
  it('the notary unreachable at recovery: AMBIGUOUS, nothing sent again', async () => {
    const input = { thread: 'notary-down', target: 'svc', action: 'charge', args: { amount: '4.00' } }
    const id = toEffect(input).id
    await killAt('after-apply', input, true, 'notary-down')
    const { state, store, gate } = await recoverWith(agentTarget(notarizedService, { notaryUrl: 'http://127.0.0.1:9' }), id)
    try {
      expect(state).toBe('AMBIGUOUS')
      expect(applications(notarizedService, id)).toBe(1)
    } finally {
      await gate.close()
      await store.close()
    }
  })

  it('the notary\'s answer not signed by a service the agent trusts: AMBIGUOUS, not COMMITTED', async () => {
    const input = { thread: 'notary-untrusted', target: 'svc', action: 'charge', args: { amount: '5.00' } }
    const id = toEffect(input).id
    await killAt('after-apply', input, true, 'notary-untrusted')
    const other = generateKeyPair('relay', 'svc')
    const { state, store, gate } = await recoverWith(agentTarget(notarizedService, { notaryUrl: notary.url, services: { svc: other.publicKey } }), id)
    try {
      expect(state).toBe('AMBIGUOUS')
      expect(applications(notarizedService, id)).toBe(1)
    } finally {
      await gate.close()
      await store.close()
    }
  })

  it('the service dies in its handler after claiming (connection dropped after applying): CLAIMED without outcome is AMBIGUOUS, applied once', async () => {
    const input = { thread: 'notary-service-crash', target: 'svc', action: 'charge', args: { amount: '6.00' } }
    const id = toEffect(input).id
    notarizedService.setFault({ kind: 'drop', afterApply: true }, { times: 1 })
    const store = await openStore(storeConfig())
    const gate = new Gate({ store, targets: [agentTarget(notarizedService, { notaryUrl: notary.url })], retry: { maxAttempts: 3, backoffMs: 10 } })
    try {
      expect((await gate.submit(input)).status).toBe('ambiguous')
      expect((await log.effect(id)).attempts.map((a) => a.state)).toEqual(['CLAIMED'])
      expect(applications(notarizedService, id)).toBe(1)
    } finally {
      notarizedService.clearFaults()
      await gate.close()
      await store.close()
    }
  })
})
