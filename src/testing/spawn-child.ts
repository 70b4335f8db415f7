/**
 * Starts crash-child beside this file with a crash point armed. From the
 * built package it is plain JavaScript; when the kit itself runs from its
 * TypeScript sources (this repository's own tests under vitest) the child is
 * crash-child.ts, run through tsx from the package's folder, where tsx is
 * installed.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { CRASH_ENV, CRASH_MODE_ENV, type CrashPoint } from '../core/crash-points.js'

export interface ChildEnd {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

const fromSource = import.meta.url.endsWith('.ts')
const child = fileURLToPath(new URL(`./crash-child.${fromSource ? 'ts' : 'js'}`, import.meta.url))
const packageRoot = fileURLToPath(new URL('../..', import.meta.url))

/** Runs the child on `planFile` with `point` armed; a child still running after `timeoutMs` is killed and reported. */
export function runCrashChild(planFile: string, point: CrashPoint, timeoutMs: number): Promise<ChildEnd> {
  const env: NodeJS.ProcessEnv = { ...process.env, [CRASH_ENV]: point }
  // Killed, not paused, whatever the caller's own environment says.
  delete env[CRASH_MODE_ENV]
  const args = fromSource ? ['--import', 'tsx', child, planFile] : [child, planFile]
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], ...(fromSource ? { cwd: packageRoot } : {}) })
    let stdout = ''
    let stderr = ''
    proc.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`the crash child armed at ${point} was still running after ${timeoutMs} ms; killed.\n${stderr}`))
    }, timeoutMs)
    proc.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
    proc.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}
