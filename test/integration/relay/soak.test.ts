/**
 * Four relay processes (the built binary) on one PostgreSQL drain a shared
 * outbox while a seeded chaos schedule SIGKILLs them (then restarts them)
 * and SIGSTOPs them past their lease (then SIGCONTs them). The target
 * service's own ledger is the judge:
 * - every effect applied at most once, whatever its tier;
 * - after a final recovery pass, tier 1 and 2 applied exactly once and
 *   COMMITTED; tier 3 COMMITTED (applied once) or AMBIGUOUS (at most once);
 * - every journal chain intact.
 *
 * INTERLOCK_RELAY_SOAK_EFFECTS sets the number of effects (default 1500),
 * INTERLOCK_RELAY_SOAK_SEED the chaos seed.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toEffect } from '../../../src/core/effect.js'
import { Gate } from '../../../src/core/gate.js'
import { ChainVerifier } from '../../../src/core/stores/record-hash.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'
import { prng, relayReady, startRelayProc, type RelayProc } from '../../helpers/relay-procs.js'
import { applications, effectInputs, relayDeployment, TIER_OF, type RelayDeployment } from '../../helpers/relay-setup.js'

const EFFECTS = Number(process.env.INTERLOCK_RELAY_SOAK_EFFECTS ?? 1500)
const SEED = Number(process.env.INTERLOCK_RELAY_SOAK_SEED ?? 20261129)
const LEASE_MS = 1_000
const RELAYS = 4
const CONCURRENCY = 16

let db: TestDatabase
let service: HttpService
let deploy: RelayDeployment
beforeAll(async () => {
  db = await createTestDatabase()
  service = await startHttpService()
  deploy = await relayDeployment(db.url, service)
})
afterAll(async () => {
  await deploy?.close()
  await service?.close()
  await db?.drop()
})

describe('four relays on one PostgreSQL under SIGKILL and SIGSTOP', () => {
  it(`${EFFECTS} effects: at most once each; tier 1 and 2 committed after reconcile`, { timeout: 900_000 }, async () => {
    const started = Date.now()
    const inputs = effectInputs(EFFECTS, 64)
    for (let i = 0; i < inputs.length; i += 500) await Promise.all(inputs.slice(i, i + 500).map((e) => deploy.outbox.submit(e)))

    const random = prng(SEED)
    const args = ['--config', deploy.configFile, '--lease-ms', String(LEASE_MS), '--poll-ms', '100', '--concurrency', String(CONCURRENCY)]
    let generation = 0
    const spawnRelay = (slot: number) => startRelayProc(`relay-${slot}-${generation++}`, args, deploy.dir)
    const relays: RelayProc[] = Array.from({ length: RELAYS }, (_, i) => spawnRelay(i))
    await Promise.all(relays.map((r) => relayReady(r)))

    const admin = new pg.Client({ connectionString: db.url })
    await admin.connect()
    const unsettled = async () =>
      Number((await admin.query(`SELECT count(*) AS n FROM interlock.effects WHERE state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED')`)).rows[0].n)

    let kills = 0
    let stops = 0
    const deadline = Date.now() + 600_000
    try {
      while ((await unsettled()) > 0) {
        if (Date.now() > deadline) throw new Error(`not drained in time; relay stderr:\n${relays.map((r) => r.stderr.slice(-2000)).join('\n')}`)
        await new Promise((r) => setTimeout(r, 150 + random() * 350))
        const slot = Math.floor(random() * RELAYS)
        const victim = relays[slot]!
        if (victim.stopped) continue
        if (random() < 0.5) {
          victim.child.kill('SIGKILL')
          await victim.exited
          kills++
          relays[slot] = spawnRelay(slot)
        } else {
          // Stopped for longer than its lease: others take its effects over; it must not dispatch them again.
          victim.child.kill('SIGSTOP')
          victim.stopped = true
          stops++
          const ms = LEASE_MS * (1.5 + random() * 2)
          setTimeout(() => {
            victim.child.kill('SIGCONT')
            victim.stopped = false
          }, ms)
        }
      }
    } finally {
      for (const r of relays) r.child.kill('SIGCONT')
      // A relay restarted a moment ago installs its SIGTERM handler once it has loaded.
      await Promise.all(relays.map((r) => relayReady(r).catch(() => {})))
      for (const r of relays) r.child.kill('SIGTERM')
      await Promise.all(relays.map((r) => r.exited))
      await admin.end()
    }
    // The last generation drained and exited 0 on SIGTERM.
    for (const r of relays) expect((await r.exited).code, r.stderr).toBe(0)

    // At most once, before anything else runs.
    const ids = inputs.map((e) => ({ id: toEffect(e).id, target: e.target }))
    let counts = service.counts()
    // A relay stopped after its lease check and resumed past its lease would send a tier-2 request
    // the relay that took over already sent; the fence asked right before the write stops it
    // (src/core/targets/http/fence.ts). Any double application fails, with the effect's story.
    for (const { id, target } of ids) {
      const n = applications(counts, target, id)
      if (n <= 1) continue
      // Say how: the effect's journal (who wrote what, when) beside the service's requests for it.
      const history = (await deploy.store.history(id)).map((r) => `${r.at} ${r.state} ${JSON.stringify(r.data).slice(0, 160)}`)
      const requests = service.requests().filter((q) => q.effectId === id || q.path.includes(id)).map((q) => `${q.method} ${q.path}`)
      expect.fail(`${target} ${id} applied ${n} times\n${history.join('\n')}\n${requests.join('\n')}`)
    }

    // The final recovery pass (what `interlock reconcile-effects` runs).
    const gate = new Gate({ store: deploy.store, targets: createTargets(deploy.config.targets).values(), retry: { maxAttempts: 5, backoffMs: 20 } })
    await gate.recover()
    await gate.close()

    counts = service.counts()
    const states = new Map((await deploy.store.list({})).map((s) => [s.effect.id, s.state]))
    const tally: Record<string, number> = {}
    for (const { id, target } of ids) {
      const n = applications(counts, target, id)
      const state = states.get(id)
      tally[`${target}:${state}`] = (tally[`${target}:${state}`] ?? 0) + 1
      if (TIER_OF[target] === 3) {
        expect(n, id).toBeLessThanOrEqual(1)
        expect(['COMMITTED', 'AMBIGUOUS'], id).toContain(state)
        if (state === 'COMMITTED') expect(n, id).toBe(1)
      } else {
        expect(n, `${target} ${id}`).toBeGreaterThanOrEqual(1)
        expect(n, `${target} ${id}`).toBe(1)
        expect(state, id).toBe('COMMITTED')
      }
    }
    const verifier = new ChainVerifier()
    let records = 0
    for await (const r of deploy.store.records()) {
      verifier.check(r)
      records++
    }
    const seconds = (Date.now() - started) / 1000
    console.log(
      `relay soak: ${EFFECTS} effects, ${kills} SIGKILLs, ${stops} SIGSTOPs, ${records} records, ${seconds.toFixed(1)} s; ` +
        `${JSON.stringify(tally)}; every effect applied at most once`,
    )
    expect(kills + stops).toBeGreaterThan(0)
  })
})
