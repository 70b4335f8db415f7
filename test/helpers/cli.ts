/** The built binary, run as a user runs it (see build-once.ts for how it is built). */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { inject } from 'vitest'

export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Fails with the compiler's output when the CLI did not build (build-once.ts
 * hands it over instead of aborting the run), so a file that runs the binary
 * says why rather than failing on a missing file. Call it in beforeAll.
 */
export function assertCliBuilt(): void {
  const buildError = inject('cliBuildError')
  if (buildError) throw new Error(`the CLI did not build:\n${buildError}`)
}

export function interlock(args: string[], options: { cwd: string; env?: Record<string, string>; stdin?: string }): Promise<Run> {
  const bin = join(inject('cliRoot'), 'bin', 'run.js')
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: options.cwd,
      // A clean environment: no INTERLOCK_* from the developer's shell, no colours.
      env: { PATH: process.env.PATH ?? '', HOME: options.cwd, NO_COLOR: '1', ...options.env },
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    })
    if (options.stdin !== undefined) child.stdin!.end(options.stdin)
    let stdout = ''
    let stderr = ''
    // Decoded as a stream: a character split across two chunks of a large output stays whole.
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

