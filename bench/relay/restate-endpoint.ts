/**
 * The Restate service of bench/relay, served by `procs` Node processes
 * behind one address: a deployment in Restate has one endpoint, and Restate
 * scales a deployment by putting several instances behind a load balancer
 * (https://docs.restate.dev/services/deploy/standalone, "Running services
 * behind a load balancer"). Here the balancer is node:cluster's primary,
 * which hands each accepted connection to a worker in turn; restate-server
 * opens a connection per 128 concurrent streams
 * (`http2-streams-per-connection-limit`), so a backlog spreads over all.
 *
 * Same protocol as worker.ts: prints "ready" once every worker listens,
 * starts counting CPU on "go" (stdin), and on SIGTERM prints the CPU every
 * process used since (the primary's and the workers') as JSON.
 *
 *   tsx bench/relay/restate-endpoint.ts <port> <procs>
 */
import cluster from 'node:cluster'
import { once } from 'node:events'
import type { Context } from '@restatedev/restate-sdk'

const [portArg, procsArg] = process.argv.slice(2) as [string, string]

type Message = { ready: true } | { go: true } | { stop: true } | { cpuSeconds: number; done: number }

if (cluster.isPrimary) {
  const workers = Array.from({ length: Number(procsArg) }, () => cluster.fork())
  await Promise.all(workers.map((w) => waitFor(w, (m) => 'ready' in m)))
  process.stdout.write('ready\n')
  process.stdin.setEncoding('utf8')
  await once(process.stdin, 'data')
  const cpuAtGo = process.cpuUsage()
  for (const w of workers) w.send({ go: true } satisfies Message)
  await once(process, 'SIGTERM')
  const reports = await Promise.all(
    workers.map((w) => {
      const answer = waitFor(w, (m) => 'cpuSeconds' in m) as Promise<{ cpuSeconds: number; done: number }>
      w.send({ stop: true } satisfies Message)
      return answer
    }),
  )
  const own = process.cpuUsage(cpuAtGo)
  const exited = workers.map((w) => once(w, 'exit'))
  for (const w of workers) w.kill('SIGKILL')
  await Promise.all(exited)
  const cpuSeconds = reports.reduce((s, r) => s + r.cpuSeconds, (own.user + own.system) / 1e6)
  process.stdout.write(`${JSON.stringify({ stats: { done: reports.map((r) => r.done) }, cpuSeconds })}\n`)
  process.exit(0)
} else {
  // The SDK logs every invocation at INFO unless told otherwise (read once, at load): a line per item would be measured too.
  process.env.RESTATE_LOGGING ??= 'ERROR'
  const restate = await import('@restatedev/restate-sdk')
  let done = 0
  let cpuAtGo = process.cpuUsage()
  const bench = restate.service({
    name: 'bench',
    handlers: {
      one: async (ctx: Context) => {
        await ctx.run('noop', async () => 1)
        done++
      },
    },
  })
  await restate.serve({ services: [bench], port: Number(portArg) })
  process.on('message', (m: Message) => {
    if ('go' in m) cpuAtGo = process.cpuUsage()
    if ('stop' in m) {
      const cpu = process.cpuUsage(cpuAtGo)
      process.send!({ cpuSeconds: (cpu.user + cpu.system) / 1e6, done } satisfies Message)
    }
  })
  process.send!({ ready: true } satisfies Message)
}

function waitFor(worker: ReturnType<typeof cluster.fork>, match: (m: Message) => boolean): Promise<Message> {
  return new Promise((resolve) => {
    const on = (m: Message) => {
      if (!match(m)) return
      worker.off('message', on)
      resolve(m)
    }
    worker.on('message', on)
  })
}
