/**
 * A relay across a PostgreSQL failover (Debian's PostgreSQL 15, a primary
 * and a streaming standby, the store's URL naming both with
 * target_session_attrs=read-write):
 *
 * - synchronous: the primary SIGKILLed mid-drain, /healthz says 503 "store
 *   unreachable" with the reason at once, the standby is promoted, the relay
 *   resumes on it by itself, /healthz is 200 again, and every effect is
 *   applied once; the fencing tokens it is given there are above every token
 *   it held before (the claims that gave them were replicated before they
 *   answered, the sequence's advance with them);
 * - asynchronous, made deterministic: the standby stopped while a relay
 *   drains effects it already holds, the primary killed, the stale standby
 *   promoted. The journal lost every record the relay was told was durable
 *   (AUTHORIZED, DISPATCHED, COMMITTED), the sequence went back, and the relay sends the
 *   effects again: the tier-3 ledger counts each twice. The relay says what
 *   happened (store-rewound), since the tokens it is given are not above
 *   those it held.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { recordHashes } from '../../helpers/failover-run.js'
import { debianPostgresMissing, startReplicatedPostgres, type ReplicatedPostgres } from '../../helpers/replicated-postgres.js'

const missing = debianPostgresMissing()
const key = generateKeyPair('relay', 'failover-relay')
const cleanup: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
  cleanup.length = 0
})

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!(await Promise.resolve().then(cond).catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

async function health(r: Relay): Promise<{ code: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${r.healthPort}/healthz`)
  return { code: res.status, body: (await res.json()) as Record<string, unknown> }
}

async function setup(sync: boolean, target: CountingTarget) {
  if (missing) throw new Error(missing)
  const cluster = await startReplicatedPostgres({ sync })
  cleanup.push(() => cluster.stop())
  const url = `postgresql://postgres:pw-not-shown@${cluster.hostList}/postgres?target_session_attrs=read-write`
  const store = await openStore({ kind: 'postgres', url, schema: 'interlock' }, { autoInstall: true })
  cleanup.push(() => store.close())
  const outbox = new Outbox({ store, targets: [target] })
  cleanup.push(() => outbox.close())
  const lines: string[] = []
  const relay = new Relay({ store, targets: [target], relayId: 'follower', key, policy: new RulesPolicy([]), pollMs: 50, leaseMs: 1_500, healthPort: 0, log: (l) => lines.push(l) })
  cleanup.push(() => relay.stop())
  return { cluster, store, outbox, relay, lines }
}

async function settled(store: Store, n: number): Promise<boolean> {
  const c = await store.countByState()
  return c.COMMITTED + c.AMBIGUOUS === n
}

async function submit(outbox: Outbox, from: number, n: number, target: string): Promise<string[]> {
  const ids: string[] = []
  for (let i = from; i < from + n; i++) ids.push((await outbox.submit({ thread: `agent-${i % 5}`, target, action: 'send', args: { n: i } })).effectId)
  return ids
}

describe('a relay across a failover', { timeout: 150_000 }, () => {
  it('synchronous: 503 "store unreachable" at once, resumes on the promoted standby, 200 again; every effect applied once; tokens only grow', async () => {
    const target = new CountingTarget('t1', 1)
    const { cluster, store, outbox, relay, lines } = await setup(true, target)
    await relay.start()
    const before = await submit(outbox, 0, 40, 't1')
    await until(() => settled(store, 40), 30_000, 'the first 40 effects to settle')
    expect((await health(relay)).code).toBe(200)

    await cluster.killPrimary()
    await until(async () => (await health(relay)).body.status === 'store unreachable', 10_000, '/healthz to say "store unreachable"')
    const down = await health(relay)
    expect(down.code).toBe(503)
    expect(down.body.failing).toMatchObject({ what: 'claiming effects', unreachable: true })
    expect(String((down.body.failing as { error: string }).error)).not.toContain('pw-not-shown')

    await cluster.promote()
    let after: string[] = []
    await until(async () => ((after = await submit(outbox, 40, 40, 't1')), true), 20_000, 'a submit on the new primary')
    await until(() => settled(store, 80), 30_000, 'all 80 effects to settle on the new primary')
    await until(async () => (await health(relay)).code === 200, 10_000, '/healthz back to 200')
    for (const id of [...before, ...after]) expect(target.count(id), id).toBe(1)
    expect(lines.some((l) => /claiming effects recovered after/.test(l))).toBe(true)
    expect(lines.filter((l) => l.includes('store-rewound') || l.includes('fencing token'))).toEqual([])
  })

  it('asynchronous, the standby behind: the journal loses what the relay was told was durable, the tier-3 ledger counts each effect twice, and the relay says the store went back', async () => {
    const target = new CountingTarget('t3', 3)
    const { cluster, store, outbox, relay, lines } = await setup(false, target)
    const ids = await submit(outbox, 0, 20, 't3')
    await cluster.caughtUp()
    // From here on the standby sees nothing: the proposals are on it, what the relay does is not.
    cluster.stopStandby()
    await relay.start()
    await until(() => settled(store, 20), 30_000, 'the 20 effects to be committed on the primary')
    const told = await recordHashes(cluster.primary().url)

    await cluster.killPrimary()
    cluster.startStandby()
    await cluster.promote()
    await until(() => settled(store, 20), 60_000, 'the 20 effects to settle again on the promoted standby')
    await relay.stop()
    const kept = await recordHashes(cluster.primary().url)

    const twice = ids.filter((id) => target.count(id) === 2)
    const lost = [...told].filter((h) => !kept.has(h)).length
    console.log(`asynchronous, standby behind: ${ids.length} effects, ${twice.length} applied twice; ${told.size} records committed on the primary, ${lost} of them missing on the promoted standby`)
    expect(twice).toEqual(ids)
    // Every record the relay wrote: AUTHORIZED, DISPATCHED and COMMITTED of each effect (the proposals had reached the standby).
    expect(lost).toBe(3 * ids.length)
    expect(lines.filter((l) => l.includes('fencing token')).length).toBeGreaterThanOrEqual(1)
    expect(lines.find((l) => l.includes('fencing token'))).toMatch(/its server lacks commits this relay saw/)
  })
})
