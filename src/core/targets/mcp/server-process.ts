/**
 * A stdio MCP server as a child process of ours, and the MCP transport over
 * its stdin/stdout: what the SDK's StdioClientTransport does, but owning the
 * server's whole process tree.
 *
 * A server is often started through a launcher (`npx`, `npm exec`, `uvx`, a
 * shell script) whose child is the real server. Killing the launcher alone
 * leaves that child running with parent 1, one per session (seen: a start
 * that timed out, and `interlock check`'s probe, each left `npm exec …`
 * behind). So the server is started as the leader of a process group of its
 * own, and every way its session ends takes the whole group down within
 * about 2 s:
 * - close(): stdin is closed first, as the MCP stdio transport asks
 *   (modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio:
 *   close the input stream, wait for the server to exit, then SIGTERM, then
 *   SIGKILL); then SIGTERM to the group, then SIGKILL to the group;
 * - the server exits by itself: what it left in its group is stopped the same way;
 * - this process exits (any path, even process.exit): SIGKILL to every group
 *   still running, synchronously in the 'exit' event.
 * A SIGKILL of this process cannot be caught; the server then sees its stdin
 * close, which is all the spec gives it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { serverEnvironment } from './environment.js'

export interface ServerProcessSpec {
  command: string
  args?: string[]
  /** Added to the safe defaults (HOME, LOGNAME, PATH, SHELL, TERM, USER): nothing else of ours is passed on (environment.ts). */
  env?: Record<string, string>
  /** Names of our own variables passed on as they are, when set. */
  envPass?: string[]
  cwd?: string
  stderr?: 'inherit' | 'ignore'
}

/** How long each step of the shutdown waits for the server to go: stdin closed, then SIGTERM, then SIGKILL. */
const STEP_MS = 600

/** Process groups of servers still running, killed when this process exits. */
const running = new Set<number>()
let exitHook = false

function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false // the group is empty: every process in it is gone
  }
}

function groupAlive(pgid: number): boolean {
  return killGroup(pgid, 0 as unknown as NodeJS.Signals)
}

/** Resolves once every process of the group is gone, or after `ms`. */
async function groupGone(pgid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  while (groupAlive(pgid)) {
    if (Date.now() >= end) return false
    await new Promise((r) => setTimeout(r, 25))
  }
  return true
}

/** SIGTERM, then SIGKILL, to what is left of a group. */
async function stopGroup(pgid: number): Promise<void> {
  if (killGroup(pgid, 'SIGTERM') && !(await groupGone(pgid, STEP_MS))) {
    killGroup(pgid, 'SIGKILL')
    await groupGone(pgid, STEP_MS)
  }
  running.delete(pgid)
}

export class ServerProcessTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  private child?: ChildProcess
  private readonly buffer = new ReadBuffer()
  private closing?: Promise<void>
  /** The server process is gone: nothing more can be sent. */
  private ended = false

  constructor(private readonly spec: ServerProcessSpec) {}

  /** The server's pid, which is also its process group's id (once started). */
  get pid(): number | undefined {
    return this.child?.pid
  }

  start(): Promise<void> {
    if (this.child) throw new Error('the server process is already started')
    if (!exitHook) {
      exitHook = true
      process.on('exit', () => {
        for (const pgid of running) killGroup(pgid, 'SIGKILL')
      })
    }
    return new Promise((resolve, reject) => {
      const child = spawn(this.spec.command, this.spec.args ?? [], {
        env: serverEnvironment(this.spec),
        cwd: this.spec.cwd,
        stdio: ['pipe', 'pipe', this.spec.stderr ?? 'inherit'],
        // The leader of a process group of its own: the group is what is stopped.
        detached: true,
      })
      this.child = child
      child.on('error', (e) => {
        reject(e)
        this.onerror?.(e)
      })
      child.on('spawn', () => {
        running.add(child.pid!)
        resolve()
      })
      child.on('exit', () => {
        this.ended = true
        // The server ended by itself (or was stopped): nothing of its group may stay behind. On
        // 'exit', not 'close': a launcher's child still holding the pipes would keep 'close' away.
        void stopGroup(child.pid!)
      })
      child.on('close', () => this.onclose?.())
      child.stdin!.on('error', (e) => this.onerror?.(e))
      child.stdout!.on('error', (e) => this.onerror?.(e))
      child.stdout!.on('data', (chunk: Buffer) => {
        this.buffer.append(chunk)
        for (;;) {
          let message: JSONRPCMessage | null
          try {
            message = this.buffer.readMessage()
          } catch (e) {
            this.onerror?.(e as Error)
            continue
          }
          if (message === null) break
          this.onmessage?.(message)
        }
      })
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin
    if (!stdin || this.closing || this.ended) return Promise.reject(new Error('Not connected'))
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve()
      else stdin.once('drain', resolve)
    })
  }

  /** Ends the session: stdin closed, then SIGTERM and SIGKILL to the server's group; resolves once it is gone. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const child = this.child
      if (!child?.pid) return
      const pgid = child.pid
      const exited = new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())))
      child.stdin?.end()
      const timer = new Promise<void>((r) => setTimeout(r, STEP_MS))
      await Promise.race([exited, timer])
      await stopGroup(pgid)
      this.buffer.clear()
    })()
    return this.closing
  }
}
