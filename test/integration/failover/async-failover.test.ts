/**
 * The hazard (docs/dbas.md, "Failover"): a primary with an ASYNCHRONOUS
 * streaming standby (Debian's PostgreSQL 15), three relay processes (the
 * built `interlock relay`, [store] replication = "async-accepted") draining
 * a backlog of 1,000 effects through a multi-host URL while an agent
 * submits; the standby streams over a link with 50 ms of latency; the
 * primary SIGKILLed mid-run (the link cut with it: what was on its way is
 * lost), the standby promoted with `pg_ctl promote`, the relays following.
 *
 * How much the standby lacks depends on what was in flight at the kill: the
 * test does not fix it. What it asserts holds either way, and it prints the
 * figures. Every double at the service is an effect whose DISPATCHED the
 * dead primary holds and the new one lost (nothing else sends twice); no
 * effect is applied more than twice (one failover); the relays finish the
 * work on the new primary; its journal verifies (`outbox verify`, exit 0).
 * relay-follows.test.ts shows the loss deterministically.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { interlock } from '../../helpers/cli.js'
import { failoverRun, figuresLine } from '../../helpers/failover-run.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { debianPostgresMissing, startReplicatedPostgres, type ReplicatedPostgres } from '../../helpers/replicated-postgres.js'
import { relayDeployment, type RelayDeployment } from '../../helpers/relay-setup.js'

const missing = debianPostgresMissing()
/** The standby streams over a link this slow (a standby in another region, or one behind under load). */
const LAG_MS = 50
let cluster: ReplicatedPostgres
let service: HttpService
let deploy: RelayDeployment

beforeAll(async () => {
  if (missing) throw new Error(missing)
  cluster = await startReplicatedPostgres({ sync: false, lagMs: LAG_MS })
  service = await startHttpService()
  deploy = await relayDeployment(`postgresql://postgres@${cluster.hostList}/postgres?target_session_attrs=read-write`, service, { storeConfig: 'replication = "async-accepted"' })
}, 120_000)
afterAll(async () => {
  await deploy?.close()
  await service?.close()
  await cluster?.stop()
})

describe('asynchronous replication: the primary killed mid-run', () => {
  it('1,000 effects, three relays, an agent submitting: what is lost and what is sent twice, counted', { timeout: 240_000 }, async () => {
    let dispatchedOnDead = new Map<string, number>()
    const f = await failoverRun({
      deploy,
      service,
      prefix: 'async',
      backlog: 1000,
      agentAfter: 50,
      killAfter: 300,
      kill: () => cluster.killPrimary(),
      failover: () => cluster.promote(),
      deadRecords: () =>
        cluster.inspectDead(async (url) => {
          const c = new pg.Client({ connectionString: url })
          await c.connect()
          try {
            const rows = (await c.query<{ hash: string; effect_id: string; state: string }>('SELECT hash, effect_id, state FROM interlock.journal_records')).rows
            dispatchedOnDead = new Map()
            for (const r of rows) if (r.state === 'DISPATCHED') dispatchedOnDead.set(r.effect_id, (dispatchedOnDead.get(r.effect_id) ?? 0) + 1)
            return new Set(rows.map((r) => r.hash))
          } finally {
            await c.end()
          }
        }),
    })
    console.log(figuresLine('asynchronous failover', f))
    expect(f.submitted).toBeGreaterThanOrEqual(1050)
    // An effect missing from the new primary is a submit the agent was told was journaled, lost with the primary.
    expect(f.effects.filter((e) => e.state === 'MISSING').length).toBe(f.agentLost)
    // One failover: nothing is sent more than twice.
    expect(f.effects.filter((e) => e.applied > 2)).toEqual([])
    // Every double is explained: the dead primary journaled its DISPATCHED and the new primary does not hold that record.
    const doubles = f.effects.filter((e) => e.applied === 2)
    expect(doubles.length).toBe(f.appliedTwice)
    for (const d of doubles) expect(dispatchedOnDead.has(d.id), `${d.target} ${d.id} applied twice without a DISPATCHED on the dead primary`).toBe(true)
    // A double needs a lost record: none lost, none doubled.
    if ((f.onlyOnDead ?? 0) === 0) expect(f.appliedTwice).toBe(0)
    // The relays resumed on the new primary by themselves.
    expect(f.firstDispatchMs).toBeGreaterThan(0)
    const verify = await interlock(['outbox', 'verify', '--config', deploy.configFile], { cwd: deploy.dir })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  })
})
