/**
 * Under a real failover manager: etcd and two Patroni members (Debian's
 * packages) on loopback, synchronous_mode on. Three relay processes drain
 * 1,000 effects through a multi-host URL while an agent submits; the
 * primary's machine dies (its Patroni and its PostgreSQL SIGKILLed at once);
 * Patroni promotes the synchronous standby once the leader key expires; the
 * relays follow. Nothing lost, nothing applied twice, every effect COMMITTED
 * and applied once (tier 1 and 2) or AMBIGUOUS (tier 3), `outbox verify`
 * clean.
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { expectSafe, failoverRun, recordHashes } from '../../helpers/failover-run.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { patroniMissing, startPatroniCluster, type PatroniCluster } from '../../helpers/patroni-cluster.js'
import { relayDeployment, type RelayDeployment } from '../../helpers/relay-setup.js'

const missing = patroniMissing()
let cluster: PatroniCluster
let service: HttpService
let deploy: RelayDeployment

beforeAll(async () => {
  if (missing) throw new Error(missing)
  cluster = await startPatroniCluster()
  service = await startHttpService()
  deploy = await relayDeployment(`postgresql://postgres@${cluster.hostList}/postgres?target_session_attrs=read-write`, service)
}, 180_000)
afterAll(async () => {
  await deploy?.close()
  await service?.close()
  await cluster?.stop()
})

describe('Patroni with etcd, synchronous_mode', () => {
  it('1,000 effects, the primary\'s machine killed mid-run, Patroni promotes the standby: nothing lost, nothing applied twice', { timeout: 240_000 }, async () => {
    const f = await failoverRun({
      deploy,
      service,
      prefix: 'patroni',
      backlog: 1000,
      agentAfter: 50,
      killAfter: 300,
      kill: () => cluster.killPrimary(),
      failover: () => cluster.promoted(),
      deadRecords: () => cluster.inspectDead(recordHashes),
    })
    await expectSafe('Patroni failover', f, deploy)
  })
})
