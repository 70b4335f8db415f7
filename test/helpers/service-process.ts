/**
 * A long-running TypeScript service in a child process (through tsx), for
 * tests that SIGKILL it and start it again: how it ended, its output, and
 * when its port accepts connections.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { connect } from 'node:net'
import { until } from './restate-server.js'

export interface ServiceProcess {
  child: ChildProcess
  /** Resolves when the process has ended, with its exit code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  output(): string
  /** SIGKILL, if it still runs; resolves once it has ended. */
  kill(): Promise<void>
}

export async function startService(file: string, options: { cwd: string; port: number; env: Record<string, string> }): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: options.cwd,
    env: { ...process.env, RESTATE_LOGGING: 'WARN', ...options.env, PORT: String(options.port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out = (out + d).slice(-20_000)))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out = (out + d).slice(-20_000)))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const service: ServiceProcess = {
    child,
    exited,
    output: () => out,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
  }
  let ended = false
  void exited.then(() => (ended = true))
  try {
    await until(
      async () => ended || listening(options.port),
      30_000,
      () => `${file} did not listen on port ${options.port}${ended ? ' (it exited)' : ''}:\n${out}`,
    )
  } catch (e) {
    await service.kill()
    throw e
  }
  if (ended) throw new Error(`${file} exited before it listened on port ${options.port}:\n${out}`)
  return service
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}
