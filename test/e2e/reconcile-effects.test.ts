/**
 * `interlock reconcile-effects` as cron runs it: the built binary against a
 * real SQLite journal and a real HTTP service, judged by exit code, output
 * and the service's own count of applications.
 */
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { toEffect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { proposal } from '../../src/core/gate-context.js'
import { tryReconcileLock } from '../../src/core/reconcile/lock.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { Gate } from '../../src/core/gate.js'
import { StripeRefundTarget } from '../../src/core/targets/stripe/index.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { interlock } from '../helpers/cli.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'

let service: HttpService
beforeAll(async () => {
  service = await startHttpService()
})
afterAll(() => service?.close())

const TIER_OF: Record<string, Tier> = { t1: 1, t2: 2, t3: 3, down: 1 }
const STRIPE_KEY = 'sk_test_reconcile_later_outcomes_0000'

function setUp(): { dir: string; journal: string } {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-reconcile-'))
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[gate]
max_attempts = 2
backoff_ms = 1

[targets.t1]
type = "http"
tier = 1
url = "${service.url}/idempotent"

[targets.t2]
type = "http"
tier = 2
url = "${service.url}/plain"
query_url = "${service.url}/applied/{effect_id}"

[targets.t3]
type = "http"
tier = 3
url = "${service.url}/plain"

[targets.down]
type = "http"
tier = 1
url = "http://127.0.0.1:9/nothing-listens-here"
`,
  )
  return { dir, journal: join(dir, 'journal.db') }
}

/** Journals an effect as far as DISPATCHED, as a gate killed in flight leaves it. */
async function leaveDispatched(store: Store, target: string, n: number): Promise<string> {
  const input: EffectInput = { thread: 'cron', target, action: 'charge', args: { n } }
  const effect = toEffect(input)
  const tier = TIER_OF[target]!
  await store.append([
    { effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, tier), effect, tier },
    { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
    { effectId: effect.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: {} },
  ])
  return effect.id
}

async function withStore<T>(journal: string, fn: (s: Store) => Promise<T>): Promise<T> {
  const store = await openStore({ kind: 'sqlite', path: journal })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

const applied = (id: string) => (service.counts().idempotent[id] ?? 0) + (service.counts().plain[id] ?? 0)
const settle = () => new Promise((r) => setTimeout(r, 20))

describe('interlock reconcile-effects', () => {
  it('re-applies tier 1, finds tier 2 by query, marks tier 3 AMBIGUOUS (exit 10), and a second run changes nothing', async () => {
    const { dir, journal } = setUp()
    const ids = await withStore(journal, async (s) => ({
      t1: await leaveDispatched(s, 't1', 1),
      t2: await leaveDispatched(s, 't2', 2),
      t3: await leaveDispatched(s, 't3', 3),
    }))
    // The tier-2 effect had landed before the crash: the query must find it and nothing be sent again.
    await fetch(`${service.url}/plain`, { method: 'POST', body: JSON.stringify({ effect_id: ids.t2 }) })
    await settle()

    const dry = await interlock(['reconcile-effects', '--older-than', '1ms', '--dry-run', '--json'], { cwd: dir })
    expect(dry.code, dry.stderr).toBe(10)
    const plan = JSON.parse(dry.stdout)
    expect(plan.report.effects.map((e: { plan: string }) => e.plan).sort()).toEqual(['mark-ambiguous', 'query', 're-apply'])
    expect([applied(ids.t1), applied(ids.t2), applied(ids.t3)]).toEqual([0, 1, 0])
    await withStore(journal, async (s) => expect((await s.get(ids.t1))!.state).toBe('DISPATCHED'))

    const recent = await interlock(['reconcile-effects', '--json'], { cwd: dir })
    expect(recent.code, recent.stderr).toBe(0)
    expect(JSON.parse(recent.stdout).report.skipped.recent).toBe(3)

    const run = await interlock(['reconcile-effects', '--older-than', '1ms'], { cwd: dir })
    expect(run.code, run.stderr).toBe(10)
    expect(run.stdout).toMatch(/ambiguous: 1 AMBIGUOUS effect waiting for an operator/)
    expect(run.stdout).toMatch(/found-by-query/)
    expect([applied(ids.t1), applied(ids.t2), applied(ids.t3)]).toEqual([1, 1, 0])
    await withStore(journal, async (s) => {
      expect((await s.get(ids.t1))!.state).toBe('COMMITTED')
      expect((await s.get(ids.t2))!.state).toBe('COMMITTED')
      expect((await s.get(ids.t3))!.state).toBe('AMBIGUOUS')
    })

    const again = await interlock(['reconcile-effects', '--older-than', '1ms', '--json'], { cwd: dir })
    expect(again.code).toBe(10)
    expect(JSON.parse(again.stdout).report.effects).toEqual([{ effectId: ids.t3, target: 't3', tier: 3, found: 'AMBIGUOUS', plan: 'wait', action: 'waiting' }])
    expect([applied(ids.t1), applied(ids.t2), applied(ids.t3)]).toEqual([1, 1, 0])
  })

  it('exits 1 when a target cannot be reached, leaving the effect in flight for the next run', async () => {
    const { dir, journal } = setUp()
    const id = await withStore(journal, (s) => leaveDispatched(s, 'down', 4))
    await settle()
    const run = await interlock(['reconcile-effects', '--older-than', '1ms', '--json'], { cwd: dir })
    expect(run.code, run.stderr).toBe(1)
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'unfinished', unfinished: 1 })
    await withStore(journal, async (s) => expect((await s.get(id))!.state).toBe('DISPATCHED'))
  })

  it('with a [relay] key, seals what it journals as a relay does, and verify checks it with that key', async () => {
    const { dir, journal } = setUp()
    const key = generateKeyPair('relay', 'relay-1')
    writeKeyFile(join(dir, 'relay-1.relay.key'), key)
    appendFileSync(join(dir, 'interlock.toml'), '\n[relay]\nid = "relay-1"\nkey = "relay-1.relay.key"\n')
    const id = await withStore(journal, (s) => leaveDispatched(s, 't1', 9))
    await settle()
    const run = await interlock(['reconcile-effects', '--older-than', '1ms', '--json'], { cwd: dir })
    expect(run.code, run.stderr).toBe(0)
    const history = await withStore(journal, (s) => s.history(id))
    expect(history.map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    const seals = await withStore(journal, (s) => s.seals())
    expect(seals.map((s) => [s.statement.signer, s.statement.role, s.statement.records])).toEqual([['relay-1', 'relay', [history[3]!.hash]]])
    // The one reconcile wrote verifies with the [relay] key; DISPATCHED, written by hand without the key before it, is reported.
    const verify = await interlock(['outbox', 'verify', '--json'], { cwd: dir })
    expect(verify.code, verify.stderr).toBe(5)
    expect(JSON.parse(verify.stdout).error.context.report.writers).toMatchObject({ valid: 1, invalid: 0, unsigned: 1 })
  })

  it('exits 0 saying so when another run holds the lock, and touches nothing', async () => {
    const { dir, journal } = setUp()
    const id = await withStore(journal, (s) => leaveDispatched(s, 't1', 5))
    await settle()
    const lock = (await tryReconcileLock({ kind: 'sqlite', path: journal }))!
    try {
      const run = await interlock(['reconcile-effects', '--older-than', '1ms'], { cwd: dir })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toMatch(/another reconcile-effects is running/)
      expect(applied(id)).toBe(0)
    } finally {
      await lock.release()
    }
    const after = await interlock(['reconcile-effects', '--older-than', '1ms'], { cwd: dir })
    expect(after.code, after.stderr).toBe(0)
    expect(applied(id)).toBe(1)
  })

  it('leaves alone an effect whose relay lease is live, and takes it once the lease is given up', async () => {
    const { dir, journal } = setUp()
    const id = await withStore(journal, (s) => leaveDispatched(s, 't1', 6))
    const [claim] = await withStore(journal, (s) => s.claim({ relay: 'relay-a', limit: 1, leaseMs: 60_000 }))
    await settle()
    const run = await interlock(['reconcile-effects', '--older-than', '1ms', '--json'], { cwd: dir })
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout).report.skipped.filtered).toBe(1)
    expect(applied(id)).toBe(0)
    await withStore(journal, (s) => s.releaseLease('relay-a', [{ effectId: id, token: claim!.lease.token }]))
    const after = await interlock(['reconcile-effects', '--older-than', '1ms', '--limit', '5'], { cwd: dir })
    expect(after.code, after.stderr).toBe(0)
    expect(applied(id)).toBe(1)
  })

  it('reports a committed refund Stripe answered pending that failed since (exit 11, with failure_reason); still pending, exit 0', async () => {
    const stripe = await new StripeEmulator(STRIPE_KEY).start()
    try {
      stripe.seedCharge({ id: 'ch_late', amount: 5000, currency: 'usd' })
      stripe.refundStatus = 'pending'
      const dir = mkdtempSync(join(tmpdir(), 'interlock-reconcile-later-'))
      writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n\n[targets.refunds]\ntype = "stripe"\napi_key = "\${STRIPE_API_KEY}"\nbase_url = "${stripe.url}"\n`)
      const env = { STRIPE_API_KEY: STRIPE_KEY }
      const id = await withStore(join(dir, 'journal.db'), async (store) => {
        const gate = new Gate({ store, targets: [new StripeRefundTarget('refunds', { apiKey: STRIPE_KEY, baseUrl: stripe.url })] })
        const out = await gate.submit({ thread: 'support', target: 'refunds', action: 'refund', args: { charge: 'ch_late', amount: '20.00', currency: 'usd' } })
        await gate.close()
        expect(out).toMatchObject({ status: 'committed', receipt: { status: 'pending' } })
        return out.effectId
      })

      const pending = await interlock(['reconcile-effects', '--json'], { cwd: dir, env })
      expect(pending.code, pending.stderr).toBe(0)
      expect(JSON.parse(pending.stdout).later).toMatchObject({ asked: 1, pending: 1, failed: [] })

      stripe.failRefund(stripe.refundsFor(id)[0]!.id, 'expired_or_canceled_card')
      const failed = await interlock(['reconcile-effects'], { cwd: dir, env })
      expect(failed.code, failed.stderr).toBe(11)
      expect(failed.stdout).toContain(`${id}: COMMITTED, and refund ${stripe.refundsFor(id)[0]!.id} of 20.00 USD on charge ch_late was answered pending, and is failed now (failure_reason: expired_or_canceled_card)`)
      expect(failed.stdout).toMatch(/later-failed: 1 committed effect failed at the service since/)
      const json = JSON.parse((await interlock(['reconcile-effects', '--json'], { cwd: dir, env })).stdout)
      expect(json).toMatchObject({ status: 'later-failed', exitCode: 11, later: { failed: [{ effectId: id, target: 'refunds', status: 'failed' }] } })
      await withStore(join(dir, 'journal.db'), async (s) => expect((await s.get(id))!.state).toBe('COMMITTED'))

      const off = await interlock(['reconcile-effects', '--later-within', '0'], { cwd: dir, env })
      expect(off.code, off.stderr).toBe(0)
      expect(stripe.count(id)).toBe(1)
    } finally {
      await stripe.close()
    }
  })

  it('refuses a bad --older-than as a usage error', async () => {
    const { dir } = setUp()
    const run = await interlock(['reconcile-effects', '--older-than', 'soon'], { cwd: dir })
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/--older-than "soon" is not a duration/)
  })
})
