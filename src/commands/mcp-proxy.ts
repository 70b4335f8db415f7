import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { NAME } from '../core/effect.js'
import { UsageError } from '../core/errors.js'
import { httpAccess, McpProxy, ModuleToolProxy, proxiedTargetOf, serveHttp, type HttpAccess, type ProxiedTarget } from '../integrations/mcp/index.js'

export default class McpProxyCommand extends BaseCommand<typeof McpProxyCommand> {
  static override summary = 'Stand in front of an MCP server: side-effecting tool calls go through the gate, everything else passes through.'
  static override description = `An MCP server for an agent host (Claude Desktop, Claude Code, Cursor, any MCP client) to start instead of the upstream server of an [targets.<name>] of type "mcp". It mirrors the upstream: its tools (schemas untouched), resources and subscriptions, prompts, completions, logging, progress, cancellation, ping, and what the server asks of the client (sampling, elicitation, roots); capabilities both ways, except tasks.

A call of a tool whose tier is 1, 2 or 3 (declared under [targets.<name>.tools.<tool>], else from its annotations: readOnlyHint is read, idempotentHint is tier 1, anything else tier 3) is journaled and goes through the gate: policy holds, premises (rests_on: what the agent read is read again right before sending; changed, the call is REJECTED), dispatch by tier, recovery. The client gets the server's own result once COMMITTED (from the journal if the call was made before), the server's own error if FAILED, and a tool error saying what to do if HELD (the effect id and the release command), REJECTED (what changed), AMBIGUOUS (an operator must resolve it) or still in flight. Calls of read tools are forwarded, not journaled.

Callers: every call is made as a principal (over stdio the OS user the proxy runs as, user:<login>; over HTTP what its credentials prove, token:<name> or oauth:<issuer>#<subject>), journaled with its effect and part of its id, so one caller never joins, replays or reads another's effects; [targets.<name>] allow / deny (and each tool's) refuse a principal's calls before anything is journaled, and policy rules may match a principal.

Threads: one journal per MCP session by default, so a host that restarts and repeats a call applies it again; --thread (or the target's \`thread\`) names one thread for every session, or "per-client" one per caller and client name, so the repeat is answered from the journal. A call's _meta may name its own ("interlock/thread"; "interlock/key" or SEP-3182's idempotencyKey adds a caller key, which names one call: the same key with other arguments is refused; "interlock/retry": true marks a retry). An identical call after one that COMMITTED is a retry or a new call by the tool's dedupe setting (docs/mcp.md, "Repeats and retries"). A W3C traceparent / tracestate in _meta goes on to the server and is journaled with the effect.

At start it reads the server's tool list (a declared tool, query or premise the server does not have: exit 3, naming the key), and, inline, recovers this target's effects left in flight by a proxy that was killed. Over stdio it serves one client on stdin/stdout and ends when the client does; every log line goes to stderr. --http serves Streamable HTTP at http://HOST:PORT/mcp until SIGTERM or SIGINT.

Over HTTP, [targets.<name>.proxy_http] says who may call (docs/mcp.md, "Exposing the proxy over HTTP"). A request whose Host is not allowed, or whose Origin is present and not allowed, is refused 403 (DNS rebinding): on a loopback address localhost, 127.0.0.1 and [::1] at the bound port are allowed; on any other address allowed_hosts must list the names clients use. Callers authenticate with Authorization: Bearer: a static token ([[targets.<name>.proxy_http.tokens]], principal token:<name>) or an OAuth access token ([targets.<name>.proxy_http.oauth], principal oauth:<iss>#<sub>; metadata at /.well-known/oauth-protected-resource). A session belongs to the principal that initialized it. Without authentication configured --http does not start, unless bound to a loopback address with --insecure-no-auth.

A target module that declares tools (defineTarget({ tools })) is served the same way with no upstream server: its tools are listed as the module declares them, and every call is an effect of that target through the gate, made as the caller's principal in the session's thread (docs/targets.md, "Your own code: target modules").

--outbox only proposes: relays (\`interlock relay\`) decide and send, and a call is answered with what its effect came to within --wait (a PostgreSQL store with access = "agent" is always used so).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --config /etc/interlock/notes.toml',
    '<%= config.bin %> <%= command.id %> --target memory --http 127.0.0.1:8931',
    '<%= config.bin %> <%= command.id %> --http 127.0.0.1:8931 --insecure-no-auth',
    '<%= config.bin %> <%= command.id %> --http 0.0.0.0:8931',
    '<%= config.bin %> <%= command.id %> --outbox --wait 60000',
    '<%= config.bin %> <%= command.id %> --thread notes-assistant',
  ]

  // stdout is the MCP protocol channel: no --json envelope, nothing printed there.
  static override enableJsonFlag = false

  static override flags = {
    target: Flags.string({ char: 't', helpValue: '<name>', description: 'The [targets.<name>] to serve: of type "mcp" (stand in front of its server), or of type "module" whose module declares tools. Default: the only mcp target, else the only module target with tools.' }),
    http: Flags.string({
      helpValue: '<host:port>',
      description: 'Serve Streamable HTTP at http://<host:port>/mcp instead of stdio (port 0: any free port). Callers authenticate as [targets.<name>.proxy_http] says.',
    }),
    'insecure-no-auth': Flags.boolean({
      dependsOn: ['http'],
      description: 'With --http on a loopback address only: serve without authentication. Every local process, of every user, can then call through the proxy; Host and Origin are still checked.',
    }),
    outbox: Flags.boolean({ description: 'Only propose: relays decide and send (a store drained by `interlock relay`).' }),
    thread: Flags.string({
      helpValue: '<name>',
      description:
        'The thread (journal) of the calls that name none in _meta: "per-session" (each MCP session its own), "per-client" (one per caller and client name), or one thread\'s name for every session, e.g. notes-assistant. Default: the target\'s `thread`, else "per-session".',
    }),
    wait: Flags.integer({ min: 0, max: 3_600_000, default: 30_000, description: 'With --outbox: the longest wait for a call\'s outcome, in milliseconds, before answering that it is in flight.' }),
  }

  async run(): Promise<void> {
    const listen = this.flags.http === undefined ? undefined : hostPort(this.flags.http)
    const thread = this.flags.thread === undefined ? undefined : threadName(this.flags.thread)
    const config = await this.interlockConfig()
    const agentStore = config.store.kind === 'postgres' && config.store.access === 'agent'
    const interlock = await this.openInterlock()
    const log = (line: string) => this.logToStderr(line)
    // SIGTERM and SIGINT end the proxy the orderly way (its server's process group stopped too), from the start on.
    const stop = new AbortController()
    const onSignal = () => stop.abort()
    process.once('SIGTERM', onSignal)
    process.once('SIGINT', onSignal)
    let proxy: McpProxy | ModuleToolProxy | undefined
    try {
      const chosen = proxiedTargetOf(interlock, this.flags.target)
      // Who may call is settled before the server is started: a refusal costs nothing.
      const access = listen ? await this.httpAccess(chosen, listen.host) : undefined
      const mode = this.flags.outbox || agentStore ? 'outbox' : 'inline'
      proxy =
        chosen.kind === 'module'
          ? ModuleToolProxy.start({ interlock, target: chosen.target, tools: chosen.tools, mode, waitMs: this.flags.wait, thread, log })
          : await McpProxy.start({ interlock, target: chosen.target.name, mode, waitMs: this.flags.wait, thread, log })
      if (!listen || !access) {
        if (!stop.signal.aborted) await proxy.serveStdio(process.stdin, process.stdout, stop.signal)
        return
      }
      const http = await serveHttp(proxy, listen.host, listen.port, log, access)
      log(`mcp-proxy: HTTP access: ${http.protection}`)
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

  private httpAccess(chosen: ProxiedTarget, bindHost: string): Promise<HttpAccess> {
    const settings = chosen.kind === 'mcp' ? chosen.target.config.proxyHttp : chosen.proxyHttp
    return httpAccess({ target: chosen.target.name, settings, bindHost, insecureNoAuth: this.flags['insecure-no-auth'] })
  }
}

function hostPort(text: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text)
  const port = m ? Number(m[2]) : NaN
  if (!m || port > 65_535) throw new UsageError(`--http ${JSON.stringify(text)} is not HOST:PORT`, { hint: 'For example --http 127.0.0.1:8931 (port 0 picks a free one).' })
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port }
}

function threadName(text: string): string {
  if (!NAME.test(text)) {
    throw new UsageError(`--thread ${JSON.stringify(text)} is not a thread name`, { hint: 'Use "per-session", "per-client", or 1-200 letters, digits or ._:@/- (starting with a letter or digit), e.g. --thread notes-assistant.' })
  }
  return text
}
