/**
 * The Restate peer of bench/relay: `n` invocations of a handler that makes
 * one `ctx.run` (restate-endpoint.ts), behind a restate-server of its own on
 * loopback (a temporary base directory, its defaults otherwise; test/helpers/
 * restate-server.ts). Restate keeps its log and state in its own RocksDB
 * under that directory, its WAL fsynced (`rocksdb-disable-wal-fsync = false`,
 * the default): not in PostgreSQL.
 *
 * The backlog: every invocation sent to the ingress with `/send` before the
 * clock starts. So that none runs while the others are still being sent, each
 * is sent with `?delay=` to become due at one instant after the last send:
 * the clock starts there, and stops when `sys_invocation` holds no invocation
 * that has not completed. What is timed is Restate starting N due
 * invocations, the handler's step journaled, each completed.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { freePort } from '../../test/helpers/free-port.js'
import { startRestate } from '../../test/helpers/restate-server.js'
import { machineCpuSeconds, processCpuSeconds } from './cpu.js'

export interface RestateDrain {
  seconds: number
  workerSeconds: number
  serverSeconds: number
  machineBusy: number
}

/** Time to send one invocation, generously (measured: well under 1 ms with 64 in flight), for the instant all become due. */
const SEND_MS = 2
const SEND_IN_FLIGHT = 64
const NOT_DONE = `SELECT count(*) AS n FROM sys_invocation WHERE status <> 'completed'`

export async function drainRestate(n: number, procs: number, log: (s: string) => void): Promise<RestateDrain> {
  let serverProcess: ChildProcess | undefined
  const server = await startRestate({
    spawn: (command, args, options) => (serverProcess = spawn(command, args, options)),
    retries: 'server default',
    logFilter: 'error',
  })
  let endpoint: ChildProcess | undefined
  try {
    const port = await freePort()
    endpoint = spawn(process.execPath, ['--import', 'tsx', 'bench/relay/restate-endpoint.ts', String(port), String(procs)], { stdio: ['pipe', 'pipe', 'inherit'] })
    let output = ''
    endpoint.stdout!.on('data', (d: Buffer) => (output += d.toString()))
    await until(() => output.includes('ready\n'), 60_000, 'the Restate endpoint never said ready')
    await server.register(`http://127.0.0.1:${port}`)

    log(`filling ${n}... `)
    const due = Date.now() + 5_000 + n * SEND_MS
    let next = 0
    await Promise.all(
      Array.from({ length: SEND_IN_FLIGHT }, async () => {
        while (next < n) {
          const j = next++
          const delay = due - Date.now()
          if (delay <= 0) throw new Error(`filling Restate took longer than ${SEND_MS} ms per invocation: raise SEND_MS`)
          const r = await fetch(`${server.ingress}/bench/one/send?delay=${delay}ms`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(j) })
          if (!r.ok) throw new Error(`restate send: ${r.status} ${await r.text()}`)
          await r.arrayBuffer()
        }
      }),
    )
    const pending = await notDone(server)
    if (pending !== n) throw new Error(`after the fill ${pending} invocations are not completed, not ${n}: some ran early`)
    endpoint.stdin!.write('go\n')
    const serverPid = serverProcess!.pid!
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())))
    const serverBefore = processCpuSeconds(serverPid)
    const machineBefore = machineCpuSeconds()
    const started = performance.now()
    let remaining = n
    while (remaining > 0) {
      await new Promise((r) => setTimeout(r, 250))
      remaining = await notDone(server)
    }
    const seconds = (performance.now() - started) / 1000
    const serverSeconds = processCpuSeconds(serverPid) - serverBefore
    const machineAfter = machineCpuSeconds()
    const exited = once(endpoint, 'exit')
    endpoint.kill('SIGTERM')
    await exited
    const last = JSON.parse(output.trim().split('\n').at(-1)!) as { cpuSeconds: number; stats: { done: number[] } }
    log(`(per process: ${last.stats.done.join(', ')}) `)
    const workerSeconds = last.cpuSeconds
    return { seconds, workerSeconds, serverSeconds, machineBusy: (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total) }
  } finally {
    if (endpoint && endpoint.exitCode === null && endpoint.signalCode === null) endpoint.kill('SIGKILL')
    await server.stop()
  }
}

async function notDone(server: Awaited<ReturnType<typeof startRestate>>): Promise<number> {
  return Number((await server.query(NOT_DONE))[0]!.n)
}

async function until(ok: () => boolean, ms: number, why: string): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(why)
    await new Promise((r) => setTimeout(r, 50))
  }
}
