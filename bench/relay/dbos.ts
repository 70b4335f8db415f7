/**
 * The DBOS peer of bench/relay: the backlog as N workflows of one no-op step
 * each, enqueued on one DBOS queue, drained by DBOS processes. DBOS's system
 * database is a database of its own on the bench's PostgreSQL server.
 *
 * Throughput settings, as DBOS documents its queues
 * (https://docs.dbos.dev/typescript/reference/queues and the "Worker
 * Concurrency" section of https://docs.dbos.dev/typescript/tutorials/queue-tutorial):
 * `workerConcurrency` caps the workflows a process runs at once (here the
 * same number in flight as every other system's process), which needs an
 * executor id of its own per process; without it one process's poll claims
 * the whole backlog. `minPollingIntervalMs` (the SDK's QueueParameters,
 * default 1000) is how often a process polls the queue while it has room:
 * here the relay's own poll interval, 50 ms.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'

export const DBOS_QUEUE = 'bench'
/** Enqueued with this version and run by executors of it, so no version registry decides who dequeues. */
const VERSION = 'bench'
const APP = 'interlock-bench'
export const DBOS_POLL_MS = 50

async function setUp(url: string, executorID: string, listenQueues?: string[]) {
  const { DBOS } = await import('@dbos-inc/dbos-sdk')
  DBOS.setConfig({ name: APP, systemDatabaseUrl: url, logLevel: 'error', executorID, applicationVersion: VERSION, ...(listenQueues ? { listenQueues } : {}) })
  const step = DBOS.registerStep(async () => 1, { name: 'noop' })
  DBOS.registerWorkflow(async (_j: number) => step(), { name: 'one-step' })
  return DBOS
}

/** One worker process's DBOS: launched (and so polling) on go. */
export async function dbosWorker(url: string): Promise<{ go(): Promise<void>; stop(): Promise<unknown> }> {
  const DBOS = await setUp(url, `bench-${process.pid}`)
  return {
    // The queue and its settings are in the system database (fillDbos registered them): launching starts polling it.
    go: () => DBOS.launch(),
    stop: () => DBOS.shutdown(),
  }
}

/**
 * Fills the system database at `url` with `n` enqueued workflows, in a child
 * process (DBOS is one per process): DBOS launched there to migrate the
 * system database and register the queue with `concurrency` per process (a
 * queue's settings live in the system database, for every process polling
 * it), listening to no queue, then the workflows enqueued 1,000 to a
 * transaction (DBOSClient.enqueueInTransaction).
 */
export async function fillDbos(url: string, n: number, concurrency: number): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, 'fill', url, String(n), String(concurrency)], { stdio: ['ignore', 'inherit', 'inherit'] })
  const [code] = (await once(child, 'exit')) as [number | null]
  if (code !== 0) throw new Error(`DBOS fill exited with ${code}`)
}

async function fillHere(url: string, n: number, concurrency: number): Promise<void> {
  const DBOS = await setUp(url, 'bench-fill', [])
  await DBOS.launch()
  await DBOS.registerQueue(DBOS_QUEUE, { workerConcurrency: concurrency, minPollingIntervalMs: DBOS_POLL_MS })
  await DBOS.shutdown()
  const { DBOSClient } = await import('@dbos-inc/dbos-sdk')
  const pg = (await import('pg')).default
  const client = await DBOSClient.create({ systemDatabaseUrl: url, applicationName: APP })
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  try {
    for (let i = 0; i < n; i += 1000) {
      await db.query('BEGIN')
      for (let j = i; j < Math.min(n, i + 1000); j++) {
        await client.enqueueInTransaction(db, { queueName: DBOS_QUEUE, workflowName: 'one-step', appVersion: VERSION }, j)
      }
      await db.query('COMMIT')
    }
  } finally {
    await db.end()
    await client.destroy()
  }
}

if (process.argv[2] === 'fill') {
  await fillHere(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]))
  process.exit(0)
}
