import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { UsageError } from '../core/errors.js'
import { McpProxy, serveHttp } from '../integrations/mcp/index.js'

export default class McpProxyCommand extends BaseCommand<typeof McpProxyCommand> {
  static override summary = 'Stand in front of an MCP server: side-effecting tool calls go through the gate, everything else passes through.'
  static override description = `An MCP server for an agent host (Claude Desktop, Claude Code, Cursor, any MCP client) to start instead of the upstream server of an [targets.<name>] of type "mcp". It mirrors the upstream: its tools (schemas untouched), resources and subscriptions, prompts, completions, logging, progress, cancellation, ping, and what the server asks of the client (sampling, elicitation, roots); capabilities both ways, except tasks.

A call of a tool whose tier is 1, 2 or 3 (declared under [targets.<name>.tools.<tool>], else from its annotations: readOnlyHint is read, idempotentHint is tier 1, anything else tier 3) is journaled and goes through the gate: policy holds, premises (rests_on: what the agent read is read again right before sending; changed, the call is REJECTED), dispatch by tier, recovery. The client gets the server's own result once COMMITTED (from the journal if the call was made before), the server's own error if FAILED, and a tool error saying what to do if HELD (the effect id and the release command), REJECTED (what changed), AMBIGUOUS (an operator must resolve it) or still in flight. Calls of read tools are forwarded, not journaled.

Callers: every call is made as a principal (over stdio the OS user the proxy runs as, user:<login>), journaled with its effect and part of its id, so one caller never joins, replays or reads another's effects; [targets.<name>] allow / deny (and each tool's) refuse a principal's calls before anything is journaled, and policy rules may match a principal.

Threads: one journal per MCP session, unless the call's _meta names one ("interlock/thread"; "interlock/key" or SEP-3182's idempotencyKey adds a caller key, which names one call: the same key with other arguments is refused; "interlock/retry": true marks a retry). An identical call after one that COMMITTED is a retry or a new call by the tool's dedupe setting (docs/mcp.md, "Repeats and retries"). A W3C traceparent / tracestate in _meta goes on to the server and is journaled with the effect.

At start it reads the server's tool list (a declared tool, query or premise the server does not have: exit 3, naming the key), and, inline, recovers this target's effects left in flight by a proxy that was killed. Over stdio it serves one client on stdin/stdout and ends when the client does; every log line goes to stderr. --http serves Streamable HTTP at http://HOST:PORT/mcp until SIGTERM or SIGINT.

--outbox only proposes: relays (\`interlock relay\`) decide and send, and a call is answered with what its effect came to within --wait (a PostgreSQL store with access = "agent" is always used so).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --config /etc/interlock/notes.toml',
    '<%= config.bin %> <%= command.id %> --target memory --http 127.0.0.1:8931',
    '<%= config.bin %> <%= command.id %> --outbox --wait 60000',
  ]

  // stdout is the MCP protocol channel: no --json envelope, nothing printed there.
  static override enableJsonFlag = false

  static override flags = {
    target: Flags.string({ char: 't', helpValue: '<name>', description: 'The [targets.<name>] of type "mcp" to stand in front of. Default: the only one.' }),
    http: Flags.string({ helpValue: '<host:port>', description: 'Serve Streamable HTTP at http://<host:port>/mcp instead of stdio (port 0: any free port).' }),
    outbox: Flags.boolean({ description: 'Only propose: relays decide and send (a store drained by `interlock relay`).' }),
    wait: Flags.integer({ min: 0, max: 3_600_000, default: 30_000, description: 'With --outbox: the longest wait for a call\'s outcome, in milliseconds, before answering that it is in flight.' }),
  }

  async run(): Promise<void> {
    const listen = this.flags.http === undefined ? undefined : hostPort(this.flags.http)
    const config = await this.interlockConfig()
    const agentStore = config.store.kind === 'postgres' && config.store.access === 'agent'
    const interlock = await this.openInterlock()
    const log = (line: string) => this.logToStderr(line)
    // SIGTERM and SIGINT end the proxy the orderly way (its server's process group stopped too), from the start on.
    const stop = new AbortController()
    const onSignal = () => stop.abort()
    process.once('SIGTERM', onSignal)
    process.once('SIGINT', onSignal)
    let proxy: McpProxy | undefined
    try {
      proxy = await McpProxy.start({ interlock, target: this.flags.target, mode: this.flags.outbox || agentStore ? 'outbox' : 'inline', waitMs: this.flags.wait, log })
      if (!listen) {
        if (!stop.signal.aborted) await proxy.serveStdio(process.stdin, process.stdout, stop.signal)
        return
      }
      const http = await serveHttp(proxy, listen.host, listen.port, log)
      log(`mcp-proxy: serving ${proxy.target.name} at ${http.url}`)
      if (!stop.signal.aborted) await new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve(), { once: true }))
      log('mcp-proxy: stopping')
      await http.close()
    } finally {
      await proxy?.close()
      await interlock.close()
      process.off('SIGTERM', onSignal)
      process.off('SIGINT', onSignal)
    }
  }
}

function hostPort(text: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text)
  const port = m ? Number(m[2]) : NaN
  if (!m || port > 65_535) throw new UsageError(`--http ${JSON.stringify(text)} is not HOST:PORT`, { hint: 'For example --http 127.0.0.1:8931 (port 0 picks a free one).' })
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port }
}
