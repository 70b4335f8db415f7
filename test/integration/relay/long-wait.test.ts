/**
 * A service that asks a relay to wait longer than [gate] max_wait_ms (here a
 * 429 with Retry-After: 2 against max_wait_ms 100), on real SQLite and
 * PostgreSQL outboxes and a real HTTP service, tier 3: the effect goes back
 * to AUTHORIZED and frees its concurrency slot at once (the target's other
 * effects are sent meanwhile); its lease is parked until the time the service
 * named, so no relay claims it before, not even after the relay that parked
 * it is gone; then it is sent exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

const key = generateKeyPair('relay', 'long-wait')
let dir: string
let pgDb: TestDatabase
let service: HttpService
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-long-wait-'))
  pgDb = await createTestDatabase()
  service = await startHttpService()
})
afterAll(async () => {
  await service?.close()
  await pgDb?.drop()
  rmSync(dir, { recursive: true, force: true })
})

const stores: [string, () => StoreConfig][] = [
  ['SQLite', () => ({ kind: 'sqlite', path: join(dir, 'outbox.db') })],
  ['PostgreSQL', () => ({ kind: 'postgres', url: pgDb.url, schema: 'long_wait' })],
]

function mailTargets() {
  const mail: TargetConfig = { type: 'http', tier: 3, url: `${service.url}/plain`, method: 'POST', headers: {}, timeoutMs: 3_000, connectTimeoutMs: 1_000 }
  return createTargets({ mail }).values()
}

function relay(store: Store, relayId: string): Relay {
  return new Relay({
    store,
    targets: mailTargets(),
    relayId,
    key,
    policy: new RulesPolicy([]),
    concurrency: 1,
    leaseMs: 2_000,
    pollMs: 20,
    retry: { maxAttempts: 3, backoffMs: 5, maxWaitMs: 100 },
  })
}

describe.each(stores)('a long Retry-After on %s', (name, config) => {
  it('frees the slot, keeps every relay off the effect until then, and sends it once after', async () => {
    service.reset()
    const store = await openStore(config(), { autoInstall: true })
    const outbox = new Outbox({ store, targets: mailTargets() })
    const send = (n: number) => outbox.submit({ thread: `mail-${name}`, target: 'mail', action: 'send', args: { n } })
    const a = await send(1)
    const b = await send(2)
    const c = await send(3)
    // The first request the service sees (A's) is answered 429, Retry-After: 2.
    service.setFault({ kind: 'status', status: 429, retryAfter: '2' }, { path: '/plain', times: 1 })
    const sent = (id: string) => service.requests().filter((r) => r.effectId === id).length

    const first = relay(store, `${name}-r1`)
    await first.start()
    // One slot for the target: B and C could only go while A waits.
    expect(await b.result()).toMatchObject({ status: 'committed' })
    expect(await c.result()).toMatchObject({ status: 'committed' })
    const waiting = (await store.get(a.effectId))!
    expect(waiting.state).toBe('AUTHORIZED')
    const notBefore = Date.parse(String(waiting.detail.notBefore))
    expect(notBefore).toBeGreaterThan(Date.now())
    expect(sent(a.effectId)).toBe(1)
    expect(service.counts().plain[a.effectId]).toBeUndefined()

    // The relay that parked the lease goes away; the lease does not come free before notBefore.
    await first.stop()
    expect(await store.claim({ relay: 'intruder', limit: 10, leaseMs: 1_000, targets: ['mail'] })).toEqual([])
    const second = relay(store, `${name}-r2`)
    await second.start()
    await new Promise((r) => setTimeout(r, Math.max(0, notBefore - Date.now() - 300)))
    expect(second.stats().claimed).toBe(0)
    expect(sent(a.effectId)).toBe(1)

    expect(await a.result()).toMatchObject({ status: 'committed' })
    await second.stop()
    expect(sent(a.effectId)).toBe(2)
    expect(service.counts().plain[a.effectId]).toBe(1)
    const records = await store.history(a.effectId)
    expect(records.map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    expect(records[3]!.data.returned).toContain('429')
    expect(Date.parse(records[4]!.at)).toBeGreaterThanOrEqual(notBefore)
    await outbox.close()
    await store.close()
  })
})
