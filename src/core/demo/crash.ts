/**
 * The demo's crash: run the worker with `after-apply` armed in pause mode and
 * SIGKILL it once `expected.paused` effects have paused there — applied by
 * their target, COMMITTED not yet written. That is the window tier 1 closes by
 * re-applying with the same key, tier 2 by asking, and tier 3 cannot close.
 * It waits as well for the `expected.settled` stale effects to be decided (the
 * worker prints their outcomes): killed before one was journaled, the demo
 * would have nothing to show for it.
 */
import { spawn } from 'node:child_process'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { CRASH_ENV, CRASH_MODE_ENV, PAUSED_PREFIX } from '../crash-points.js'

export function runWorkerUntilPaused(
  planFile: string,
  expected: { paused: number; settled: number },
  timeoutMs: number,
  log: (l: string) => void,
): Promise<string> {
  const worker = fileURLToPath(new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url))
  const child = spawn(process.execPath, [...process.execArgv, worker, planFile], {
    env: { ...process.env, [CRASH_ENV]: 'after-apply', [CRASH_MODE_ENV]: 'pause' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let paused = 0
    let settled = 0
    const killWhenDue = () => {
      if (paused === expected.paused && settled === expected.settled) child.kill('SIGKILL')
    }
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the demo worker did not reach its crash point within ${timeoutMs} ms:\n${stderr}`))
    }, timeoutMs)
    eachLine(child.stdout, (line) => {
      try {
        const { label, outcome } = JSON.parse(line) as { label: string; outcome: { status: string } }
        log(`worker: ${label} → ${outcome.status}`)
        settled++
        killWhenDue()
      } catch {
        stderr += `${line}\n`
      }
    })
    eachLine(child.stderr, (line) => {
      if (!line.startsWith(PAUSED_PREFIX)) {
        stderr += `${line}\n`
        return
      }
      paused++
      killWhenDue()
    })
    // 'close', not 'exit': by then both pipes have ended and their last lines are counted.
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL' && paused === expected.paused && settled === expected.settled) resolve('SIGKILL')
      else reject(new Error(`the demo worker exited (${signal ?? code}) before its effects were in flight:\n${stderr}`))
    })
  })
}

/** `each` whole line of the stream: a pipe's reads end anywhere, mid-line too. */
function eachLine(stream: Readable, each: (line: string) => void): void {
  let rest = ''
  stream.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n')
    rest = lines.pop()!
    for (const line of lines) if (line) each(line)
  })
  stream.on('end', () => {
    if (rest) each(rest)
  })
}
