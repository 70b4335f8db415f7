/**
 * Global setup: nothing a test run starts outlives it.
 *
 * A process is the run's when it was
 * - written down by a test worker as it spawned it (record-children.ts), or
 * - seen, by a census of /proc every 100 ms, as a child of one of the run's
 *   processes, or in vitest's own process group after the run began, or
 *   carrying this run's mark in its environment (INTERLOCK_TEST_RUN), or
 * - in a process group or session whose leader's pid was one of the run's
 *   (the kernel reuses no pid while a group or session still holds it, so
 *   this names a detached child's whole group even after the child is gone).
 * The census keys processes by pid and start time, so one orphaned later is
 * still known as the run's, and a reused pid is not.
 *
 * At teardown, after the other global setups stopped their servers
 * (teardowns run in reverse order: this file is listed first), any process
 * of the run's still alive, vitest's own workers aside, is a leak: the run
 * fails (exit code 1; vitest only logs a teardown's errors), each leak is
 * named by its command line, and then killed, so it does not outlive the run.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { commandLine, environmentHas, listPids, processKey, readProcess, type ProcessEntry } from './process-census.js'

const MARK = 'INTERLOCK_TEST_RUN'
const CENSUS_MS = 100
/** How long a process a test has just killed may take to disappear before it counts as a leak. */
const DYING_MS = 5_000

export default function setup(): () => Promise<void> {
  const self = readProcess(process.pid)
  if (!self) return async () => {} // no /proc: not Linux, nothing to check with
  const mark = randomUUID()
  const dir = mkdtempSync(join(tmpdir(), 'interlock-run-'))
  process.env[MARK] = mark
  process.env.INTERLOCK_TEST_RUN_DIR = dir
  const ancestors = new Set<number>()
  for (let p = readProcess(self.ppid); p && p.pid > 1; p = readProcess(p.ppid)) ancestors.add(p.pid)

  // Keys (pid@start) of the run's processes, and every pid any of them ever had.
  const ours = new Set<string>([processKey(self)])
  const oursPids = new Set<number>([self.pid])
  const add = (pid: number, start: number): void => {
    ours.add(processKey({ pid, start }))
    oursPids.add(pid)
  }
  // Processes looked at and found unrelated: their environment is read once, not at every census.
  const unrelated = new Set<string>()
  const spawned = (): void => {
    let text = ''
    try {
      text = readFileSync(join(dir, 'spawned'), 'utf8')
    } catch {
      return // nothing spawned yet
    }
    for (const line of text.split('\n')) {
      const [pid, start] = line.split(' ').map(Number)
      if (pid && start) add(pid, start)
    }
  }
  // A process is classified when first seen: between two censuses only the new pids are read.
  let known = new Map<number, ProcessEntry>()
  const census = (full = false): ProcessEntry[] => {
    spawned()
    const now = new Map<number, ProcessEntry>()
    for (const pid of listPids()) {
      const entry = (!full && known.get(pid)) || readProcess(pid)
      if (entry && entry.start >= self.start && !ancestors.has(pid)) now.set(pid, entry)
    }
    known = now
    const all = [...now.values()]
    const live = new Set(all.filter((p) => ours.has(processKey(p))).map((p) => p.pid))
    for (let grew = true; grew; ) {
      grew = false
      for (const p of all) {
        const key = processKey(p)
        if (live.has(p.pid)) continue
        const related =
          live.has(p.ppid) || oursPids.has(p.pgid) || oursPids.has(p.sid) || p.pgid === self.pgid ||
          (!unrelated.has(key) && environmentHas(p.pid, MARK, mark))
        if (!related) {
          unrelated.add(key)
          continue
        }
        unrelated.delete(key)
        add(p.pid, p.start)
        live.add(p.pid)
        grew = true
      }
    }
    return all
  }
  const timer = setInterval(() => census(), CENSUS_MS)
  timer.unref()

  const leaks = (): ProcessEntry[] =>
    // Read afresh: a state (zombie) or a parent may have changed since first seen.
    census(true).filter((p) => p.pid !== self.pid && p.state !== 'Z' && ours.has(processKey(p)) && !isVitestWorker(p, self))

  return async () => {
    clearInterval(timer)
    let left = leaks()
    for (const deadline = Date.now() + DYING_MS; left.length > 0 && Date.now() < deadline; left = leaks()) {
      await new Promise((r) => setTimeout(r, 100))
    }
    rmSync(dir, { recursive: true, force: true })
    if (left.length === 0) return
    process.exitCode = 1
    const lines = left.map((p) => `  pid ${p.pid} (parent ${p.ppid}, group ${p.pgid}): ${commandLine(p).slice(0, 300)}`)
    console.error(`\nleak check: ${left.length} process(es) started by this test run outlived it (now killed):\n${lines.join('\n')}\n`)
    for (const p of left) {
      try {
        process.kill(p.pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
  }
}

/** vitest's own worker processes (pool: forks) may still be closing when global teardown runs. */
function isVitestWorker(p: ProcessEntry, self: ProcessEntry): boolean {
  return p.ppid === self.pid && /vitest[\\/]dist/.test(commandLine(p))
}
