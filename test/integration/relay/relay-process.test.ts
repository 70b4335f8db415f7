/**
 * The `interlock relay` binary as an operator runs it: across a PostgreSQL
 * restart (nothing lost, nothing applied twice), SIGTERM drains and exits 0
 * (finishes what it started, gives back what it had not), /healthz and
 * /metrics answer.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '../../../src/core/clock.js'
import { effectDigest } from '../../../src/core/crypto/digest.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { newNonce, signStatement } from '../../../src/core/crypto/sign.js'
import { signedJson } from '../../../src/core/crypto/statements.js'
import { toEffect } from '../../../src/core/effect.js'
import { releaseEffect } from '../../../src/core/outbox/release.js'
import { outboxStatus } from '../../../src/core/outbox/status.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'
import { relayReady, startRelayProc } from '../../helpers/relay-procs.js'
import { applications, effectInputs, relayDeployment } from '../../helpers/relay-setup.js'
import { startRestartablePostgres, type RestartablePostgres } from '../../helpers/restartable-postgres.js'

let service: HttpService
beforeAll(async () => {
  service = await startHttpService()
})
afterAll(async () => {
  await service?.close()
})

async function count(url: string, where: string): Promise<number> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return Number((await c.query(`SELECT count(*) AS n FROM interlock.effects WHERE ${where}`)).rows[0].n)
  } finally {
    await c.end()
  }
}

async function until(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('relay across a PostgreSQL restart', () => {
  let server: RestartablePostgres
  beforeAll(async () => {
    server = await startRestartablePostgres()
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('reconnects, loses nothing, applies nothing twice; /healthz and /metrics answer', async () => {
    const deploy = await relayDeployment(server.url, service)
    const first = effectInputs(300, 20, 'before')
    for (const e of first) await deploy.outbox.submit(e)
    const relay = startRelayProc('restart-relay', ['--config', deploy.configFile, '--lease-ms', '2000', '--poll-ms', '100', '--concurrency', '4', '--health-port', '0'], deploy.dir)
    try {
      await relayReady(relay)
      const port = Number(/127\.0\.0\.1:(\d+)/.exec(relay.stderr)![1])
      await until(async () => (await count(server.url, `state = 'COMMITTED'`)) >= 30, 30_000, 'the first commits')
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)

      await server.stop()
      await new Promise((r) => setTimeout(r, 1_500))
      await server.start()

      const second = effectInputs(150, 20, 'after')
      await until(async () => {
        for (const e of second) await deploy.outbox.submit(e)
        return true
      }, 30_000, 'submits after the restart')
      await until(async () => (await count(server.url, `state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED')`)) === 0, 60_000, 'the outbox to drain')

      const health = await fetch(`http://127.0.0.1:${port}/healthz`)
      expect(health.status).toBe(200)
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
      expect(Number(/interlock_relay_store_errors_total\{relay="restart-relay"\} (\d+)/.exec(metrics)![1])).toBeGreaterThan(0)

      relay.child.kill('SIGTERM')
      expect((await relay.exited).code, relay.stderr).toBe(0)
      const counts = service.counts()
      const states = new Map((await deploy.store.list({})).map((s) => [s.effect.id, s.state]))
      for (const e of [...first, ...second]) {
        const id = toEffect(e).id
        const n = applications(counts, e.target, id)
        expect(n, `${e.target} ${id}`).toBeLessThanOrEqual(1)
        if (e.target !== 't3') {
          // Tier 1 and 2 finish exactly once even when a commit was cut off by the restart.
          expect(states.get(id), id).toBe('COMMITTED')
          expect(n, id).toBe(1)
        } else {
          expect(['COMMITTED', 'AMBIGUOUS']).toContain(states.get(id))
        }
      }
    } finally {
      relay.child.kill('SIGKILL')
      await deploy.close()
    }
  })
})

describe('relay drain on SIGTERM', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('stops claiming, finishes what it started, releases the rest, exits 0; another relay finishes the outbox', async () => {
    const deploy = await relayDeployment(db.url, service)
    const inputs = effectInputs(600, 10, 'drain').map((e) => ({ ...e, target: 't1' }))
    for (let i = 0; i < inputs.length; i += 100) await Promise.all(inputs.slice(i, i + 100).map((e) => deploy.outbox.submit(e)))
    const args = ['--config', deploy.configFile, '--lease-ms', '60000', '--poll-ms', '50', '--concurrency', '2']
    const a = startRelayProc('drain-a', args, deploy.dir)
    try {
      await relayReady(a)
      await until(async () => (await count(db.url, `state = 'COMMITTED'`)) >= 20, 30_000, 'the first commits')
      a.child.kill('SIGTERM')
      expect((await a.exited).code, a.stderr).toBe(0)
      expect(a.stdout).toMatch(/relay drain-a: \d+ effects finished/)
      // Nothing left half-done, nothing still leased (a lease of 60 s would otherwise block everyone for a minute).
      expect(await count(db.url, `state = 'DISPATCHED'`)).toBe(0)
      expect(await count(db.url, `lease_expires > now() AND state IN ('PROPOSED', 'AUTHORIZED')`)).toBe(0)
      // Agents only propose: what the drained relay never started is still PROPOSED, for the next relay to authorize.
      const left = await count(db.url, `state IN ('PROPOSED', 'AUTHORIZED')`)
      expect(left).toBeGreaterThan(0)

      const b = startRelayProc('drain-b', args, deploy.dir)
      await relayReady(b)
      await until(async () => (await count(db.url, `state IN ('PROPOSED', 'AUTHORIZED')`)) === 0, 60_000, 'relay b to finish')
      b.child.kill('SIGTERM')
      expect((await b.exited).code, b.stderr).toBe(0)
      const counts = service.counts()
      for (const e of inputs) expect(applications(counts, 't1', toEffect(e).id)).toBe(1)
      const [relays] = [await deploy.store.relays()]
      expect(relays.map((r) => [r.relay, r.info.state]).sort()).toEqual([
        ['drain-a', 'stopped'],
        ['drain-b', 'stopped'],
      ])
    } finally {
      a.child.kill('SIGKILL')
      await deploy.close()
    }
  })
})

describe('the relay binary decides by its own interlock.toml', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('holds by its [[policy.rules]], sends a held effect after releases by its [[operators]], refuses a forged authorization, says so and holds it again', async () => {
    const keys = Object.fromEntries(['alice', 'bob', 'mallory'].map((n) => [n, generateKeyPair('operator', n)]))
    const extraConfig = `
[[operators]]
name = "alice"
public_key = "${keys.alice!.publicKey}"

[[operators]]
name = "bob"
public_key = "${keys.bob!.publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "t1"
when = [{ arg = "amount", above = "500.00" }]
quorum = 2
`
    const deploy = await relayDeployment(db.url, service, { extraConfig })
    const input = (amount: string) => ({ thread: 'refund-agent', target: 't1', action: 'refund', args: { amount } })
    const [big, forged, small] = ['900.00', '950.00', '12.00'].map((a) => toEffect(input(a)))
    // The agent's Outbox takes no policy: it only proposes.
    for (const e of [big!, forged!, small!]) expect((await deploy.outbox.submit(input(e.args.amount as string))).state).toBe('PROPOSED')
    const relay = startRelayProc('policy-relay', ['--config', deploy.configFile, '--lease-ms', '2000', '--poll-ms', '50'], deploy.dir)
    try {
      await relayReady(relay)
      const state = async (id: string) => (await deploy.store.get(id))?.state
      await until(async () => (await state(small!.id)) === 'COMMITTED' && (await state(big!.id)) === 'HELD' && (await state(forged!.id)) === 'HELD', 30_000, 'the relay to hold and send by its config')
      expect(applications(service.counts(), 't1', big!.id)).toBe(0)

      // Someone with write access forges an authorization carrying a release by a key the config does not trust.
      const now = Date.now()
      const mallory = signedJson(signStatement({ kind: 'release', effectId: forged!.id, digest: effectDigest(forged!), operator: 'mallory', rule: 'large-refunds', signedAt: new Date(now).toISOString(), expiresAt: new Date(now + 60_000).toISOString(), nonce: newNonce() }, keys.mallory!.seed))
      await deploy.store.append([{ effectId: forged!.id, from: 'HELD', to: 'HELD', data: { rule: 'large-refunds', release: mallory } }])
      await deploy.store.append([{ effectId: forged!.id, from: 'HELD', to: 'AUTHORIZED', data: { rule: 'large-refunds', releases: [mallory], signers: ['mallory', 'bob'] } }])
      // Alice and Bob, trusted by the relay's config, release the other one.
      const ctx = (who: string) => ({ store: deploy.store, operators: deploy.config.operators, policy: new RulesPolicy(deploy.config.policy.rules), key: keys[who]!, clock: systemClock })
      await releaseEffect(ctx('alice'), big!.id)
      await releaseEffect(ctx('bob'), big!.id)

      await until(async () => (await state(big!.id)) === 'COMMITTED' && relay.stderr.includes(`refused effect ${forged!.id}`), 30_000, 'the release to be sent and the forgery refused')
      expect(relay.stderr).toMatch(/"mallory" is not a trusted operator/)
      const counts = service.counts()
      expect([big, forged, small].map((e) => applications(counts, 't1', e!.id))).toEqual([1, 0, 1])
      // Refused, and held again for operators (AUTHORIZED → HELD) under the rule in force.
      expect((await deploy.store.history(forged!.id)).at(-1)).toMatchObject({ state: 'HELD', data: { rule: 'large-refunds' } })
      expect(relay.stderr).toContain('held again under rule "large-refunds"')
      await until(async () => (await outboxStatus(deploy.store, new Date())).refused.some((r) => r.effectId === forged!.id), 10_000, 'the refusal in the heartbeat')

      relay.child.kill('SIGTERM')
      expect((await relay.exited).code, relay.stderr).toBe(0)
    } finally {
      relay.child.kill('SIGKILL')
      await deploy.close()
    }
  })
})
