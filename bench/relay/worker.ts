/**
 * One worker process of bench/relay: an Interlock relay, a pg-boss worker, a
 * graphile-worker runner or a DBOS process, each draining a no-op job/effect. It connects,
 * prints "ready", starts on "go" (stdin), and on SIGTERM stops and prints
 * what it did and the CPU it used as JSON.
 *
 *   tsx bench/relay/worker.ts <interlock|pgboss|graphile|dbos> <database url> [concurrency]
 */
import { once } from 'node:events'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { Relay } from '../../src/core/relay/relay.js'
import { dbosWorker } from './dbos.js'
import { openStore } from '../../src/core/stores/open.js'
import type { EffectTarget } from '../../src/core/targets/target.js'

const [kind, url, concurrencyArg] = process.argv.slice(2) as [string, string, string | undefined]
const concurrency = Number(concurrencyArg ?? 64)

const noop: EffectTarget = { name: 'noop', tier: 1, validatePremises: async () => [], apply: async (e) => ({ ok: e.id }) }

async function interlock(): Promise<{ go(): Promise<void>; stop(): Promise<unknown> }> {
  const store = await openStore({ kind: 'postgres', url, schema: 'interlock' }, { maxConnections: 8 })
  const relay = new Relay({
    store,
    targets: [noop],
    relayId: `bench-${process.pid}`,
    key: generateKeyPair('relay', 'bench'),
    policy: new RulesPolicy([]),
    concurrency,
    leaseMs: 30_000,
    pollMs: 50,
  })
  return {
    go: () => relay.start(),
    stop: async () => {
      const stats = await relay.stop()
      await store.close()
      return stats
    },
  }
}

async function pgboss(): Promise<{ go(): Promise<void>; stop(): Promise<unknown> }> {
  const { PgBoss } = await import('pg-boss')
  const boss = new PgBoss({ connectionString: url, max: 8, supervise: false, schedule: false, migrate: false })
  boss.on('error', () => {})
  await boss.start()
  let done = 0
  return {
    go: async () => {
      // pg-boss's documented way to throughput: batches fetched and completed in one statement each,
      // several workers per process (localConcurrency), fetching back to back while batches come back full.
      await boss.work('bench', { batchSize: 100, localConcurrency: Math.max(1, Math.round(concurrency / 16)), burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        done += jobs.length
      })
    },
    stop: async () => {
      await boss.stop({ graceful: true, close: true })
      return { done }
    },
  }
}

async function graphile(): Promise<{ go(): Promise<void>; stop(): Promise<unknown> }> {
  const { run, Logger } = await import('graphile-worker')
  let done = 0
  let runner: Awaited<ReturnType<typeof run>> | undefined
  return {
    go: async () => {
      runner = await run({
        connectionString: url,
        noHandleSignals: true,
        // Silent: its default logger writes a line per job, which would be measured too.
        logger: new Logger(() => () => {}),
        // The configuration of graphile-worker's own performance figures
        // (https://worker.graphile.org/docs/performance): jobs fetched 500 at a time into a
        // local queue, completions batched, 24 jobs at once on a pool of 25.
        preset: { worker: { concurrentJobs: 24, maxPoolSize: 25, localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
        taskList: {
          noop: async () => {
            done++
          },
        },
      })
    },
    stop: async () => {
      await runner?.stop()
      return { done }
    },
  }
}

const worker = kind === 'interlock' ? await interlock() : kind === 'pgboss' ? await pgboss() : kind === 'dbos' ? await dbosWorker(url) : await graphile()
process.stdout.write('ready\n')
process.stdin.setEncoding('utf8')
await once(process.stdin, 'data')
const cpuAtGo = process.cpuUsage()
await worker.go()
await once(process, 'SIGTERM')
// CPU from "go" to the stop signal: what draining cost this process (bench/relay/cpu.ts).
const cpu = process.cpuUsage(cpuAtGo)
const stats = await worker.stop()
process.stdout.write(`${JSON.stringify({ stats, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`)
process.exit(0)
