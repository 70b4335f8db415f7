/**
 * Relay processes for tests: the built `interlock relay` binary (see
 * build-once.ts), each with its own stderr kept for failure messages, and a
 * way to signal, wait for, and restart them.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { inject } from 'vitest'
import { assertCliBuilt } from './cli.js'

export interface RelayProc {
  readonly id: string
  child: ChildProcess
  stdout: string
  stderr: string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  stopped: boolean
}

export function startRelayProc(id: string, args: string[], cwd: string, env: Record<string, string> = {}): RelayProc {
  assertCliBuilt()
  const bin = join(inject('cliRoot'), 'bin', 'run.js')
  const child = spawn(process.execPath, [bin, 'relay', '--relay-id', id, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const proc: RelayProc = {
    id,
    child,
    stdout: '',
    stderr: '',
    stopped: false,
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
  }
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (proc.stdout += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (proc.stderr += d))
  return proc
}

/** Resolves once the relay said it is draining (it has claimed, or is about to). */
export async function relayReady(p: RelayProc, ms = 30_000): Promise<void> {
  const end = Date.now() + ms
  while (!p.stderr.includes('draining')) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`relay ${p.id} exited before it was ready:\n${p.stderr}`)
    if (Date.now() > end) throw new Error(`relay ${p.id} was not ready within ${ms} ms:\n${p.stderr}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** A seeded PRNG (mulberry32): the same seed gives the same chaos schedule. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
