/**
 * The demo's crash: run the worker with `after-apply` armed in pause mode and
 * SIGKILL it once `expected` effects have paused there — applied by their
 * target, COMMITTED not yet written. That is the window tier 1 closes by
 * re-applying with the same key, tier 2 by asking, and tier 3 cannot close.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { CRASH_ENV, CRASH_MODE_ENV, PAUSED_PREFIX } from '../crash-points.js'

export function runWorkerUntilPaused(planFile: string, expected: number, timeoutMs: number, log: (l: string) => void): Promise<string> {
  const worker = fileURLToPath(new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url))
  const child = spawn(process.execPath, [...process.execArgv, worker, planFile], {
    env: { ...process.env, [CRASH_ENV]: 'after-apply', [CRASH_MODE_ENV]: 'pause' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let paused = 0
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the demo worker did not reach its crash point within ${timeoutMs} ms:\n${stderr}`))
    }, timeoutMs)
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        try {
          const { label, outcome } = JSON.parse(line) as { label: string; outcome: { status: string } }
          log(`worker: ${label} → ${outcome.status}`)
        } catch {
          stderr += `${line}\n`
        }
      }
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        if (!line.startsWith(PAUSED_PREFIX)) {
          stderr += `${line}\n`
          continue
        }
        paused++
        if (paused === expected) child.kill('SIGKILL')
      }
    })
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL' && paused === expected) resolve('SIGKILL')
      else reject(new Error(`the demo worker exited (${signal ?? code}) before its effects were in flight:\n${stderr}`))
    })
  })
}
