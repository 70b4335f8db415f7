/**
 * The promise (docs/dbas.md, "Failover"): with SYNCHRONOUS replication
 * (synchronous_standby_names naming the standby, synchronous_commit = on) a
 * failover loses no journaled record and applies nothing twice. The same run
 * as async-failover.test.ts (1,000 effects, three relay processes, an agent
 * submitting, the standby 50 ms away, the primary SIGKILLed mid-run, the
 * standby promoted with `pg_ctl promote`), then a second failover back: the
 * dead node rebuilt as the new primary's synchronous standby, another 1,000
 * effects, the new primary killed, the rebuilt node promoted.
 *
 * After each: nothing the agent or a relay was told is missing, no effect is
 * applied twice at the service's ledger, every effect is COMMITTED and
 * applied once (tier 1 and 2) or COMMITTED once or AMBIGUOUS (tier 3; an
 * effect whose DISPATCHED was durable when its relay lost the primary), no
 * relay saw the fencing tokens go back, and `outbox verify` is clean.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectSafe, failoverRun, recordHashes } from '../../helpers/failover-run.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { debianPostgresMissing, startReplicatedPostgres, type ReplicatedPostgres } from '../../helpers/replicated-postgres.js'
import { relayDeployment, type RelayDeployment } from '../../helpers/relay-setup.js'

const missing = debianPostgresMissing()
const LAG_MS = 50
let cluster: ReplicatedPostgres
let service: HttpService
let deploy: RelayDeployment

beforeAll(async () => {
  if (missing) throw new Error(missing)
  cluster = await startReplicatedPostgres({ sync: true, lagMs: LAG_MS })
  service = await startHttpService()
  // No replication key: `interlock relay` checks the primary at start and finds it synchronous.
  deploy = await relayDeployment(`postgresql://postgres@${cluster.hostList}/postgres?target_session_attrs=read-write`, service)
}, 120_000)
afterAll(async () => {
  await deploy?.close()
  await service?.close()
  await cluster?.stop()
})

const deadHashes = () => cluster.inspectDead(recordHashes)

describe('synchronous replication: two failovers', () => {
  it('1,000 effects, the primary killed mid-run, the standby promoted: nothing lost, nothing applied twice', { timeout: 240_000 }, async () => {
    const f = await failoverRun({ deploy, service, prefix: 'sync1', backlog: 1000, agentAfter: 50, killAfter: 300, kill: () => cluster.killPrimary(), failover: () => cluster.promote(), deadRecords: deadHashes })
    await expectSafe('synchronous failover', f, deploy)
  })

  it('and back: the dead node rebuilt as the synchronous standby, 1,000 more effects, the new primary killed, the rebuilt node promoted', { timeout: 240_000 }, async () => {
    await cluster.rejoin()
    const f = await failoverRun({ deploy, service, prefix: 'sync2', backlog: 1000, agentAfter: 50, killAfter: 300, kill: () => cluster.killPrimary(), failover: () => cluster.promote(), deadRecords: deadHashes })
    await expectSafe('synchronous failover back', f, deploy)
  })
})
