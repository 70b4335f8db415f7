/**
 * `interlock mcp-proxy --target <module target>`: an MCP server of the tools
 * a target module declares (defineTarget({ tools })), with no upstream
 * server: every tools/call is an effect of that target through the gate
 * (agent/tool-call.ts, as the framework adapters do), made as the session's
 * principal, in the session's thread, answered in the words every
 * integration uses. The same serving surface as McpProxy (stdio, or one
 * Streamable HTTP session per `serve`), so http.ts serves either.
 *
 * Inline, the target's effects left in flight by a proxy that was killed are
 * recovered at start, by tier; calls wait until that is done.
 */
import type { Readable, Writable } from 'node:stream'
import { serveOneOverStdio } from './stdio.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'
import type { JsonObject } from '../../core/canonical-json.js'
import { isInterlockError } from '../../core/errors.js'
import type { Interlock } from '../../core/interlock.js'
import type { ModuleTool } from '../../core/targets/module/define-target.js'
import type { EffectTarget } from '../../core/targets/target.js'
import { runToolCall } from '../agent/tool-call.js'
import { refusedWords } from '../agent/words.js'
import type { ProxyMode } from './calls.js'
import { marked, readCallMeta } from './meta.js'
import type { Principal } from './principal.js'
import { defaultThreadName, type ThreadChoice } from './session.js'
import { recoverTarget } from './proxy.js'

export interface ModuleToolProxyOptions {
  interlock: Interlock
  target: EffectTarget
  tools: Readonly<Record<string, ModuleTool>>
  mode: ProxyMode
  waitMs?: number
  thread?: ThreadChoice
  log: (line: string) => void
}

export class ModuleToolProxy {
  private readonly servers = new Set<Server>()
  private readonly listed: Tool[]

  private constructor(
    private readonly o: ModuleToolProxyOptions,
    private readonly ready: Promise<void>,
  ) {
    this.listed = Object.entries(o.tools).map(([name, t]) => ({
      name,
      ...(t.title === undefined ? {} : { title: t.title }),
      ...(t.description === undefined ? {} : { description: t.description }),
      inputSchema: (t.inputSchema ?? { type: 'object' }) as Tool['inputSchema'],
      ...(t.annotations === undefined ? {} : { annotations: t.annotations as Tool['annotations'] }),
    }))
  }

  get target(): EffectTarget {
    return this.o.target
  }

  static start(o: ModuleToolProxyOptions): ModuleToolProxy {
    const ready = o.mode === 'inline' ? recoverTarget(o.interlock, o.target.name, o.log) : Promise.resolve()
    o.log(`mcp-proxy: ${o.target.name}: the module's ${Object.keys(o.tools).length} tools, each through the gate (${o.mode}): ${Object.keys(o.tools).join(', ')}`)
    return new ModuleToolProxy(o, ready)
  }

  /** As McpProxy.serveStdio: one client on stdin/stdout until its end of the pipe closes or `stop` aborts. */
  serveStdio(input: Readable = process.stdin, output: Writable = process.stdout, stop?: AbortSignal): Promise<void> {
    return serveOneOverStdio((t, id, who) => this.serve(t, id, who), input, output, stop)
  }


  /** One client's session on `transport`, as `principal`, until it closes. */
  async serve(transport: Transport, sessionId: string, principal: Principal): Promise<void> {
    const server = new Server({ name: `interlock-${this.o.target.name}`, version: '1' }, { capabilities: { tools: {} } })
    const closed = new Promise<void>((resolve) => (server.onclose = resolve))
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.listed }))
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const { name, arguments: args, _meta } = request.params
      if (!Object.hasOwn(this.o.tools, name)) throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`)
      await this.ready
      const thread = () => defaultThreadName(this.o.thread ?? 'per-session', this.o.target.name, { sessionId, principal }, server.getClientVersion())
      return this.call(name, (args ?? {}) as JsonObject, _meta as Record<string, unknown> | undefined, thread, principal)
    })
    this.servers.add(server)
    try {
      await server.connect(transport)
      await closed
    } finally {
      this.servers.delete(server)
    }
  }

  private async call(tool: string, args: JsonObject, meta: Record<string, unknown> | undefined, defaultThread: () => string, principal: Principal): Promise<CallToolResult> {
    const scrub = (t: string) => this.o.interlock.scrub(t)
    let m
    try {
      m = readCallMeta(meta)
    } catch (e) {
      if (!isInterlockError(e)) throw e
      const w = refusedWords(e.message, { scrub })
      return { content: [{ type: 'text', text: w.text }], isError: true }
    }
    const answer = await runToolCall(
      this.o.interlock,
      { thread: m.thread ?? defaultThread(), target: this.o.target.name, action: tool, tool, args, principal: principal.id, retry: m.retry, ...(m.key === undefined ? {} : { callId: m.key }) },
      { mode: this.o.mode, waitMs: this.o.waitMs, log: this.o.log },
    )
    const result: JsonObject = { content: [{ type: 'text', text: answer.text }], ...(answer.isError ? { isError: true } : {}) }
    return (answer.effectId ? marked(result, answer.effectId, answer.state, answer.replayed) : result) as CallToolResult
  }

  whenReady(): Promise<void> {
    return this.ready
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.servers].map((s) => s.close()))
  }
}
