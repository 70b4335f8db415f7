/**
 * Recovery whose abort loses to a late claim (docs/notary.md, "A late
 * request"): a crashed agent's request for attempt 1 reaches the service
 * while recovery aborts that attempt, and the service's claim wins. The
 * service is performing it right then, so recovery waits for the attempt's
 * outcome at the notary (as long as the target's timeout_ms) instead of
 * going AMBIGUOUS at once.
 *
 * Real parts: a child agent SIGKILLed at `after-intend` (journal DISPATCHED,
 * the notary's attempt 1 INTENDED, nothing sent), or a relay stalled there
 * past its lease and another relay taking the effect over, a SQLite journal, the
 * notary's HTTP API over its SQLite log, the demo's HTTP service behind the
 * notary's middleware, and the recovering target built from config as the
 * inline gate, the relay and reconcile-effects build it (registry.ts). The
 * race is made deterministic by two hooks: the notary, handed recovery's
 * abort, first lets the late request through and waits until the service has
 * claimed it and entered its handler; the handler is held until recovery has
 * read the lost abort's outcome (CLAIMED), then performs, refuses or dies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { CRASH_ENV } from '../../src/core/crash-points.js'
import { toBase64Url } from '../../src/core/crypto/encoding.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { toEffect, type EffectInput } from '../../src/core/effect.js'
import { DispatchFault } from '../../src/core/errors.js'
import { Gate } from '../../src/core/gate.js'
import { ATTEMPT_HEADER, EFFECT_HEADER } from '../../src/core/notary/headers.js'
import { notaryClient } from '../../src/core/notary/client.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import { notaryMiddleware } from '../../src/core/notary/middleware.js'
import { notarized } from '../../src/core/notary/notarized.js'
import { startNotaryServer, type NotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { outcomeOf } from '../../src/core/outcome.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { Relay } from '../../src/core/relay/relay.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTarget } from '../../src/core/targets/registry.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { runTsChild } from '../helpers/child.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import type { NotaryChildPlan } from '../crash/notary-child.js'

const agent = generateKeyPair('relay', 'agent-1')
const serviceKey = generateKeyPair('relay', 'svc')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { svc: serviceKey.publicKey } }
/** The target's timeout_ms: how long recovery waits for a claimed attempt's outcome. */
const WAIT_MS = 1500

function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/** What the hooks do for the one effect of a test. */
interface Scene {
  /** Runs when the notary is handed an abort, before it takes it. */
  beforeAbort?: () => Promise<void>
  /** Runs on the k-th read of the notary (k = 1, 2, ...) after an abort was answered 'decided', once the answer is ready. */
  afterLostAbortRead?: (k: number) => void | Promise<void>
  /** Called when a request for the effect has been claimed and reaches the handler; the handler waits for `hold`. */
  entered: ReturnType<typeof deferred>
  hold: ReturnType<typeof deferred>
}

let dir = ''
let inner: NotaryLog
let notary: NotaryServer | undefined
let svc: HttpService
let scene: Scene
let lostAborts = 0
let readsAfter = 0

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-claim-wait-'))
  inner = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), trusted)
  scene = { entered: deferred(), hold: deferred() }
  lostAborts = 0
  readsAfter = 0
  const afterRead = async () => {
    if (lostAborts > 0) await scene.afterLostAbortRead?.(++readsAfter)
  }
  const hooked: NotaryLog = {
    ...inner,
    async write(input) {
      const kind = (input as { kind?: unknown } | null)?.kind
      if (kind === 'abort' && scene.beforeAbort) {
        const before = scene.beforeAbort
        scene.beforeAbort = undefined
        await before()
      }
      const answer = await inner.write(input)
      if (kind === 'abort' && answer.status === 'decided') lostAborts++
      return answer
    },
    async effect(id) {
      const view = await inner.effect(id)
      await afterRead()
      return view
    },
    async attempt(id, n) {
      const view = await inner.attempt(id, n)
      await afterRead()
      return view
    },
  }
  notary = await startNotaryServer(hooked)
  const mw = notaryMiddleware({ notary: notary.url, service: 'svc', key: serviceKey, timeoutMs: 2000 })
  svc = await startHttpService({
    around: (req, res, next) =>
      mw(req, res, () => {
        scene.entered.resolve()
        void scene.hold.promise.then(next)
      }),
  })
})
afterEach(async () => {
  scene.hold.resolve()
  await svc?.close()
  await notary?.close()
  await inner?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const storeConfig = (): StoreConfig => ({ kind: 'sqlite', path: join(dir, 'journal.db') })
const plainTier3 = (): TargetConfig => ({ type: 'http', tier: 3, method: 'POST', headers: {}, timeoutMs: WAIT_MS, connectTimeoutMs: 2000, url: `${svc.url}/plain` })
/** The recovering target, from config: notary, notary_services and timeout_ms as interlock.toml gives them. */
const recoveringTarget = (notaryUrl: string) =>
  createTarget('svc', { ...plainTier3(), notary: notaryUrl, notaryServices: trusted.services } as TargetConfig, { notary: { key: agent } })
const applications = (id: string) => svc.counts().plain[id] ?? 0
const requestsFor = (id: string) => svc.requests().filter((r) => r.effectId === id).length

/** The agent killed right after writing intend for attempt 1: DISPATCHED in the journal, INTENDED at the notary, nothing sent. */
async function crashedAfterIntend(input: EffectInput, notaryUrl: string): Promise<string> {
  const plan: NotaryChildPlan = {
    store: storeConfig(),
    name: 'svc',
    target: plainTier3(),
    effects: [input],
    notary: { url: notaryUrl, agent: 'agent-1', seed: toBase64Url(agent.seed), services: trusted.services },
  }
  const file = join(dir, 'plan.json')
  writeFileSync(file, JSON.stringify(plan))
  const run = await runTsChild('test/crash/notary-child.ts', [file], { [CRASH_ENV]: 'after-intend' })
  expect(run.signal, run.stderr).toBe('SIGKILL')
  const id = toEffect(input).id
  expect((await inner.effect(id)).attempts.map((a) => a.state)).toEqual(['INTENDED'])
  return id
}

/**
 * The crashed agent's request for attempt 1, held in the network until
 * recovery aborts: sent then, and the abort taken only once the service has
 * claimed it and entered its handler.
 */
function lateRequestBeatsTheAbort(id: string, input: EffectInput): { answered: Promise<number | 'dropped'> } {
  let answered: Promise<number | 'dropped'> = Promise.resolve('dropped')
  scene.beforeAbort = async () => {
    answered = fetch(`${svc.url}/plain`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [EFFECT_HEADER]: id, [ATTEMPT_HEADER]: '1' },
      body: JSON.stringify({ action: input.action, args: input.args, effect_id: id }),
    }).then(
      async (res) => (await res.text(), res.status),
      () => 'dropped' as const,
    )
    await scene.entered.promise
    expect((await inner.attempt(id, 1)).state).toBe('CLAIMED')
  }
  return {
    get answered() {
      return answered
    },
  }
}

async function stateOf(store: Store, id: string) {
  const snap = (await store.get(id))!
  return { state: snap.state, outcome: outcomeOf(snap) }
}

type Recover = (store: Store, notaryUrl: string) => Promise<void>
const RECOVERIES: [string, Recover][] = [
  ['the inline gate\'s recover()', async (store, url) => {
    const gate = new Gate({ store, targets: [recoveringTarget(url)], retry: { maxAttempts: 3, backoffMs: 10 } })
    await gate.recover()
    await gate.close()
  }],
  ['reconcile-effects', async (store, url) => {
    const result = await reconcileEffects({ store, storeConfig: storeConfig(), targets: [recoveringTarget(url)], retry: { maxAttempts: 3, backoffMs: 10 }, olderThanMs: 0, concurrency: 1 })
    expect(result.report).toBeDefined()
  }],
]

describe('recovery whose abort loses to a late request\'s claim waits for the service\'s outcome at the notary', () => {
  it.each(RECOVERIES)('the service performs while %s waits: COMMITTED with its signed answer, applied once, no second attempt sent', async (_name, recover) => {
    const input = { thread: 'claim-wait-performed', target: 'svc', action: 'charge', args: { amount: '1.00' } }
    const url = notary!.url
    const id = await crashedAfterIntend(input, url)
    const late = lateRequestBeatsTheAbort(id, input)
    // Recovery has read the lost abort's outcome (CLAIMED): only now does the handler go on and perform.
    scene.afterLostAbortRead = (k) => {
      if (k === 1) scene.hold.resolve()
    }
    const store = await openStore(storeConfig())
    try {
      await recover(store, url)
      const { state, outcome } = await stateOf(store, id)
      expect(state, JSON.stringify(outcome)).toBe('COMMITTED')
      expect(outcome).toMatchObject({ status: 'committed', via: 'query', receipt: { status: 200, notary: { attempt: 1, record: { kind: 'performed', writer: 'svc' } } } })
      expect(await late.answered).toBe(200)
      expect(applications(id)).toBe(1)
      expect(requestsFor(id)).toBe(1)
      expect((await inner.effect(id)).attempts.map((a) => a.state)).toEqual(['PERFORMED'])
      expect(await inner.verify(id)).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('the service performs while a relay that took the effect over waits: COMMITTED with its signed answer, applied once, no second attempt sent', async () => {
    const url = notary!.url
    const store = await openStore(storeConfig())
    const relayKey = generateKeyPair('relay', 'relay-claim-wait')
    const outbox = new Outbox({ store, targets: [recoveringTarget(url)] })
    const input = { thread: 'claim-wait-relay', target: 'svc', action: 'charge', args: { amount: '5.00' } }
    const h = await outbox.submit(input)
    // Relay A writes intend for attempt 1, then stalls before its request leaves (a stopped process) and loses its lease.
    const bare = createTarget('svc', plainTier3())
    let unstall!: (err: Error) => void
    const stalled = new Promise<never>((_resolve, reject) => (unstall = reject))
    const stalling: EffectTarget = { name: 'svc', tier: 3, validatePremises: (e) => bare.validatePremises(e), apply: () => stalled }
    const targetA = notarized(stalling, { notary: notaryClient({ url, writer: 'agent-1', key: agent }), services: trusted.services })
    let clockA = 0
    let stopped = false
    const a = new Relay({
      store: new Proxy(store, {
        get(t, prop, receiver) {
          // A stopped process neither renews its lease nor claims again.
          if (prop === 'renewLease') return () => new Promise<string[]>(() => {})
          if (prop === 'claim') return (req: Parameters<Store['claim']>[0]) => (stopped ? Promise.resolve([]) : store.claim(req))
          const v = Reflect.get(t, prop, receiver)
          return typeof v === 'function' ? v.bind(t) : v
        },
      }),
      targets: [targetA],
      relayId: 'A',
      key: relayKey,
      policy: new RulesPolicy([]),
      pollMs: 20,
      leaseMs: 200,
      monotonic: () => clockA,
    })
    try {
      await a.start()
      const end = Date.now() + 10_000
      while ((await inner.effect(h.effectId)).attempts[0]?.state !== 'INTENDED') {
        if (Date.now() > end) throw new Error('relay A never wrote intend')
        await new Promise((r) => setTimeout(r, 10))
      }
      stopped = true
      expect((await store.get(h.effectId))?.state).toBe('DISPATCHED')
      await new Promise((r) => setTimeout(r, 300))
      // Its request arrives late, while relay B aborts the attempt, and wins.
      const late = lateRequestBeatsTheAbort(h.effectId, input)
      scene.afterLostAbortRead = (k) => {
        if (k === 1) scene.hold.resolve()
      }
      const b = new Relay({ store, targets: [recoveringTarget(url)], relayId: 'B', key: relayKey, policy: new RulesPolicy([]), pollMs: 20, leaseMs: 5_000, retry: { maxAttempts: 3, backoffMs: 10 } })
      await b.start()
      const outcome = await h.result()
      await b.stop()
      expect(outcome.status, JSON.stringify(outcome)).toBe('committed')
      expect(outcome).toMatchObject({ status: 'committed', via: 'query', receipt: { status: 200, notary: { attempt: 1, record: { kind: 'performed', writer: 'svc' } } } })
      expect(await late.answered).toBe(200)
      expect(applications(h.effectId)).toBe(1)
      expect(requestsFor(h.effectId)).toBe(1)
      expect((await inner.effect(h.effectId)).attempts.map((x) => x.state)).toEqual(['PERFORMED'])
    } finally {
      // A resumes past its lease: its request never left (the late one above stood for it), and its fence says no.
      clockA = 60_000
      unstall(new DispatchFault('not-sent', 'relay A resumed'))
      await Promise.race([a.stop(), new Promise((r) => setTimeout(r, 3000))])
      await outbox.close()
      await store.close()
    }
  })

  it('the service refuses the late request (4xx, nothing changed): FAILED with the service\'s reason, as a refused dispatch; nothing sent again', async () => {
    const input = { thread: 'claim-wait-failed', target: 'svc', action: 'charge', args: { amount: '2.00' } }
    const url = notary!.url
    const id = await crashedAfterIntend(input, url)
    svc.setFault({ kind: 'status', status: 422, body: { error: { message: 'card declined' } } }, { times: 1 })
    const late = lateRequestBeatsTheAbort(id, input)
    scene.afterLostAbortRead = (k) => {
      if (k === 1) scene.hold.resolve()
    }
    const store = await openStore(storeConfig())
    try {
      await RECOVERIES[0]![1](store, url)
      const { state, outcome } = await stateOf(store, id)
      expect(state, JSON.stringify(outcome)).toBe('FAILED')
      expect(outcome).toMatchObject({ status: 'failed', reason: expect.stringContaining('the service refused attempt 1: card declined') })
      expect(await late.answered).toBe(422)
      expect(applications(id)).toBe(0)
      expect(requestsFor(id)).toBe(1)
      expect((await inner.effect(id)).attempts.map((a) => a.state)).toEqual(['FAILED'])
    } finally {
      await store.close()
    }
  })

  it('the service dies in its handler after claiming: AMBIGUOUS with the stated cause once the wait (timeout_ms) is over, not before and not much after', async () => {
    const input = { thread: 'claim-wait-died', target: 'svc', action: 'charge', args: { amount: '3.00' } }
    const url = notary!.url
    const id = await crashedAfterIntend(input, url)
    // Applies, then the connection is dropped: no performed, the attempt stays CLAIMED.
    svc.setFault({ kind: 'drop', afterApply: true }, { times: 1 })
    const late = lateRequestBeatsTheAbort(id, input)
    let abortLostAt = 0
    scene.afterLostAbortRead = (k) => {
      if (k === 1) {
        abortLostAt = Date.now()
        scene.hold.resolve()
      }
    }
    const store = await openStore(storeConfig())
    try {
      await RECOVERIES[0]![1](store, url)
      const elapsed = Date.now() - abortLostAt
      const { state, outcome } = await stateOf(store, id)
      expect(state, JSON.stringify(outcome)).toBe('AMBIGUOUS')
      expect(outcome).toMatchObject({ status: 'ambiguous', reason: expect.stringContaining('the service claimed attempt 1 and has not reported its outcome') })
      expect(elapsed).toBeGreaterThanOrEqual(WAIT_MS - 50)
      // Bounded by the target's timeout_ms, not the 10 s default: room for a loaded runner, well short of 10 s.
      expect(elapsed).toBeLessThan(WAIT_MS + 6000)
      expect(await late.answered).toBe('dropped')
      expect(applications(id)).toBe(1)
      expect(requestsFor(id)).toBe(1)
      expect((await inner.effect(id)).attempts.map((a) => a.state)).toEqual(['CLAIMED'])
    } finally {
      await store.close()
    }
  })

  it('the notary goes down while recovery waits: AMBIGUOUS, saying the notary stopped answering; nothing sent again', async () => {
    const input = { thread: 'claim-wait-notary-down', target: 'svc', action: 'charge', args: { amount: '4.00' } }
    const url = notary!.url
    const id = await crashedAfterIntend(input, url)
    const late = lateRequestBeatsTheAbort(id, input)
    // Recovery read the lost abort's outcome (read 1); at its first poll (read 2) the notary goes down, the poll's connection cut.
    scene.afterLostAbortRead = async (k) => {
      if (k !== 2 || !notary) return
      const down = notary
      notary = undefined
      await down.close()
    }
    const store = await openStore(storeConfig())
    try {
      await RECOVERIES[0]![1](store, url)
      const { state, outcome } = await stateOf(store, id)
      expect(state, JSON.stringify(outcome)).toBe('AMBIGUOUS')
      expect(outcome).toMatchObject({ status: 'ambiguous', reason: expect.stringContaining('the notary stopped answering while this agent waited for its outcome') })
      // The handler goes on once let go; its performed cannot be written with the notary down, so the attempt stays CLAIMED.
      scene.hold.resolve()
      expect(await late.answered).toBe(200)
      expect(applications(id)).toBe(1)
      expect(requestsFor(id)).toBe(1)
      expect((await inner.effect(id)).attempts.map((a) => a.state)).toEqual(['CLAIMED'])
    } finally {
      await store.close()
    }
  })
})
