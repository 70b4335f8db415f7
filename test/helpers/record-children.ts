/**
 * Setup file (every test worker): each process a test spawns is written down
 * the moment it starts, with its start time, in the run's folder
 * (INTERLOCK_TEST_RUN_DIR, made by leak-check.ts). The leak check's census of
 * /proc sees long-lived processes by their parents; a child whose parent ends
 * within moments (a short test, a shell that backgrounds a server) would be
 * orphaned before the census looked, and only this record names it ours.
 *
 * child_process is patched on the module object and the change pushed to ESM
 * importers (syncBuiltinESMExports), so `import { spawn } from
 * 'node:child_process'` in tests, helpers and libraries (cross-spawn, the MCP
 * SDK) is covered alike.
 */
import { appendFileSync } from 'node:fs'
import childProcess, { type ChildProcess } from 'node:child_process'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { readProcess } from './process-census.js'

const PATCHED = Symbol.for('interlock.recordChildren')
const dir = process.env.INTERLOCK_TEST_RUN_DIR
const cp = childProcess as unknown as Record<string, unknown> & { [PATCHED]?: boolean }

if (dir && !cp[PATCHED]) {
  cp[PATCHED] = true
  const record = (child: ChildProcess): void => {
    const entry = child.pid ? readProcess(child.pid) : undefined
    if (entry) appendFileSync(join(dir, 'spawned'), `${entry.pid} ${entry.start}\n`)
  }
  for (const name of ['spawn', 'fork', 'exec', 'execFile'] as const) {
    const original = cp[name] as (...args: unknown[]) => ChildProcess
    cp[name] = function (this: unknown, ...args: unknown[]): ChildProcess {
      const child = original.apply(this, args)
      record(child)
      return child
    }
    // Keeps what hangs on the original (exec's and execFile's util.promisify.custom).
    Object.defineProperties(cp[name], Object.getOwnPropertyDescriptors(original))
  }
  syncBuiltinESMExports()
}
