/**
 * The shipped package has no way to switch a guarantee off from the
 * environment: neither its source nor the built package (dist/, as
 * build-once.ts builds it, and bin/) mentions an INTERLOCK_UNSAFE_* variable,
 * and the built binary does exactly the same with the old switches set as
 * without them. The negative controls that break those guarantees on purpose
 * live in test code only (test/crash/controls.ts).
 *
 * What the binary is asked to do is what each old switch changed: recovery
 * (`reconcile-effects`) of a tier-3 effect in flight (must become AMBIGUOUS,
 * never be re-sent), of a tier-1 effect in flight (re-sent under the same
 * Idempotency-Key), of an authorized effect whose premise changed (REJECTED,
 * never sent), and of an authorized effect (sent only once the journal says
 * DISPATCHED: the service looks at the journal when the request arrives).
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, inject, it } from 'vitest'
import { toEffect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { proposal } from '../../src/core/gate-context.js'
import type { State } from '../../src/core/lifecycle.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const OLD_SWITCHES = ['INTERLOCK_UNSAFE_SEND_BEFORE_DURABLE', 'INTERLOCK_UNSAFE_NEW_KEY_ON_RETRY', 'INTERLOCK_UNSAFE_SKIP_PREMISE_CHECK', 'INTERLOCK_UNSAFE_RESEND_TIER3']

beforeAll(assertCliBuilt)

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [path]
  })
}

describe('no test switch in the shipped package', () => {
  it.each([
    ['src/', () => join(repo, 'src')],
    ['the built dist/', () => join(inject('cliRoot'), 'dist')],
    ['bin/', () => join(inject('cliRoot'), 'bin')],
  ])('%s never mentions INTERLOCK_UNSAFE', (_, dir) => {
    const files = filesUnder(dir())
    expect(files.length).toBeGreaterThan(0)
    const mentions = files.filter((f) => /INTERLOCK_UNSAFE/i.test(readFileSync(f, 'utf8'))).map((f) => f.slice(dir().length))
    expect(mentions).toEqual([])
  })
})

/** What the service saw: each request that changes something, with the effect's journal state at that moment. */
interface Seen {
  path: string
  effectId: string
  key: string | null
  stateAtArrival: State | 'absent'
}

/** A service for the three tiers, which reads the journal whenever a request arrives. */
async function startService(journal: () => Store): Promise<{ url: string; seen: Seen[]; setResource(name: string, v: unknown): void; close(): Promise<void> }> {
  const seen: Seen[] = []
  const applied = new Map<string, unknown>()
  const byKey = new Map<string, unknown>()
  const resources = new Map<string, unknown>()
  const server = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8').on('data', (d: string) => (body += d))
    req.on('end', async () => {
      const path = req.url ?? '/'
      const answer = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value))
      if (req.method === 'GET' && path.startsWith('/resources/')) {
        const v = resources.get(decodeURIComponent(path.slice('/resources/'.length)))
        return v === undefined ? answer(404, {}) : answer(200, v)
      }
      if (req.method === 'GET' && path.startsWith('/applied/')) {
        const v = applied.get(decodeURIComponent(path.slice('/applied/'.length)))
        return v === undefined ? answer(404, {}) : answer(200, v)
      }
      if (req.method !== 'POST') return answer(404, {})
      const effectId = (JSON.parse(body) as { effect_id: string }).effect_id
      const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null
      seen.push({ path, effectId, key, stateAtArrival: (await journal().get(effectId))?.state ?? 'absent' })
      if (key !== null && byKey.has(key)) return answer(200, byKey.get(key))
      const result = { id: `op_${seen.length}`, effect_id: effectId }
      applied.set(effectId, result)
      if (key !== null) byKey.set(key, result)
      answer(200, result)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    setResource: (name, v) => resources.set(name, v),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

/** Journals an effect as far as `to`, as a process killed there leaves it. */
async function leave(store: Store, input: EffectInput, tier: Tier, to: 'AUTHORIZED' | 'DISPATCHED'): Promise<string> {
  const effect = toEffect(input)
  await store.append([
    { effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, tier), effect, tier },
    { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
    ...(to === 'DISPATCHED' ? [{ effectId: effect.id, from: 'AUTHORIZED' as const, to: 'DISPATCHED' as const, data: {} }] : []),
  ])
  return effect.id
}

/** One reconcile-effects run of the built binary over the four effects, with `env`; what it did. */
async function recoverWith(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-no-switches-'))
  const path = join(dir, 'journal.db')
  let store: Store | undefined
  const service = await startService(() => store!)
  try {
    writeFileSync(
      join(dir, 'interlock.toml'),
      `[store]
path = "journal.db"

[gate]
max_attempts = 2
backoff_ms = 1

[targets.once]
type = "http"
tier = 1
url = "${service.url}/idempotent"

[targets.asked]
type = "http"
tier = 2
url = "${service.url}/plain"
query_url = "${service.url}/applied/{effect_id}"
premise_url = "${service.url}/resources/{args.doc}"

[targets.blind]
type = "http"
tier = 3
url = "${service.url}/plain"
`,
    )
    store = await openStore({ kind: 'sqlite', path })
    service.setResource('price-list', { version: 1 })
    const asked = new HttpTarget('asked', { tier: 2, url: `${service.url}/plain`, queryUrl: `${service.url}/applied/{effect_id}`, premiseUrl: `${service.url}/resources/{args.doc}` })
    const premises = await asked.capture('update', { doc: 'price-list' })
    await asked.close()
    const ids = {
      blindInFlight: await leave(store, { thread: 'switches', target: 'blind', action: 'post', args: { n: 1 } }, 3, 'DISPATCHED'),
      onceInFlight: await leave(store, { thread: 'switches', target: 'once', action: 'charge', args: { n: 2 } }, 1, 'DISPATCHED'),
      stale: await leave(store, { thread: 'switches', target: 'asked', action: 'update', args: { doc: 'price-list' }, premises }, 2, 'AUTHORIZED'),
      authorized: await leave(store, { thread: 'switches', target: 'once', action: 'charge', args: { n: 4 } }, 1, 'AUTHORIZED'),
    }
    service.setResource('price-list', { version: 2 })

    const run = await interlock(['reconcile-effects', '--older-than', '1ms', '--json'], { cwd: dir, env })
    const states: Record<string, State | undefined> = {}
    for (const [name, id] of Object.entries(ids)) states[name] = (await store.get(id))?.state
    const name = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id
    return { code: run.code, stderr: run.stderr, ids, states, seen: service.seen.map((s) => ({ ...s, effectId: name(s.effectId) })) }
  } finally {
    await store?.close()
    await service.close()
  }
}

describe('the old switches set: the built binary does exactly the same', () => {
  it('reconcile-effects: tier 3 AMBIGUOUS and not re-sent, tier 1 re-sent under its key, stale premise REJECTED, sent only once DISPATCHED', async () => {
    const plain = await recoverWith({})
    const switched = await recoverWith(Object.fromEntries(OLD_SWITCHES.map((v) => [v, '1'])))

    expect(plain.code, plain.stderr).toBe(10)
    expect(plain.states).toEqual({ blindInFlight: 'AMBIGUOUS', onceInFlight: 'COMMITTED', stale: 'REJECTED', authorized: 'COMMITTED' })
    expect(plain.seen.sort((a, b) => a.effectId.localeCompare(b.effectId))).toEqual([
      { path: '/idempotent', effectId: 'authorized', key: plain.ids.authorized, stateAtArrival: 'DISPATCHED' },
      { path: '/idempotent', effectId: 'onceInFlight', key: plain.ids.onceInFlight, stateAtArrival: 'DISPATCHED' },
    ])

    expect({ code: switched.code, states: switched.states, seen: switched.seen.sort((a, b) => a.effectId.localeCompare(b.effectId)) }).toEqual({
      code: plain.code,
      states: plain.states,
      seen: plain.seen,
    })
  })
})
