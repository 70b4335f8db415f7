#!/usr/bin/env node
// A stdio MCP server as the proxy sees it, with a wire in between: runs the
// real server given as arguments, passes every line both ways, and
//  - logs each tools/call it passes on (tool name, _meta "interlock/effect",
//    the whole _meta) to $PIPE_LOG, one JSON line each: the record of what
//    reached the server;
//  - for the tools named in $FAULT_TOOLS (comma-separated), once per tool
//    (a marker file $FAULT_ONCE.<tool> survives the restarts), plays $FAULT:
//      die-before   exit before passing the call on (never applied)
//      die-after    pass it on, exit when the server has answered (applied, answer lost)
//      hang         pass it on, never pass the answer back
//      garbage      pass it on, answer with a line that is not JSON
//      error-before answer JSON-RPC error -32602 without passing it on
//      error-after  pass it on, answer JSON-RPC error -32603 instead of the server's answer
// Plain JavaScript so the proxy under test can start it with `node` alone.
import { spawn } from 'node:child_process'
import { appendFileSync, existsSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'

const [command, ...args] = process.argv.slice(2)
const fault = process.env.FAULT ?? ''
const tools = new Set((process.env.FAULT_TOOLS ?? '').split(',').filter(Boolean))
const once = process.env.FAULT_ONCE ?? ''
const log = process.env.PIPE_LOG ?? ''

const server = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] })
server.on('exit', (code) => process.exit(code ?? 1))
process.stdin.on('end', () => server.stdin.end())

/** Request ids whose answer gets the fault. */
const faulted = new Map()

const spend = (tool) => {
  if (!tools.has(tool) || !fault || !once || existsSync(`${once}.${tool}`)) return false
  writeFileSync(`${once}.${tool}`, fault)
  return true
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let msg
  try {
    msg = JSON.parse(line)
  } catch {
    server.stdin.write(`${line}\n`)
    return
  }
  if (msg.method === 'tools/call' && msg.id !== undefined) {
    const tool = msg.params?.name
    if (spend(tool)) {
      if (fault === 'die-before') process.exit(3)
      if (fault === 'error-before') {
        process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'injected: invalid params' } })}\n`)
        return
      }
      faulted.set(msg.id, fault)
    }
    if (log) appendFileSync(log, `${JSON.stringify({ tool, effect: msg.params?._meta?.['interlock/effect'] ?? null, meta: msg.params?._meta ?? null })}\n`)
  }
  server.stdin.write(`${line}\n`)
})

createInterface({ input: server.stdout }).on('line', (line) => {
  let msg
  try {
    msg = JSON.parse(line)
  } catch {
    process.stdout.write(`${line}\n`)
    return
  }
  const f = msg.id !== undefined && !('method' in msg) ? faulted.get(msg.id) : undefined
  if (!f) {
    process.stdout.write(`${line}\n`)
    return
  }
  faulted.delete(msg.id)
  if (f === 'die-after') {
    server.kill('SIGKILL')
    process.exit(4)
  }
  if (f === 'hang') return
  if (f === 'garbage') process.stdout.write('}{ this is not JSON-RPC\n')
  if (f === 'error-after') process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: 'injected: internal error' } })}\n`)
})
