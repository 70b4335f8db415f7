/**
 * `interlock mcp-proxy`: an MCP server in front of one upstream MCP server
 * (an `mcp` target of interlock.toml), for an agent host to start instead of
 * the upstream. Side-effecting tool calls go through the gate; everything
 * else passes through (session.ts).
 *
 * At start, before any client is served:
 * 1. a session of its own with the server: its tool list is read, and every
 *    tool, query and premise declared in interlock.toml must exist there
 *    (a ConfigError naming the key path otherwise, exit 3);
 * 2. inline mode: `gate.recover()` for this target's effects, so a proxy
 *    killed mid-call loses nothing: what it had proposed is carried on, by
 *    tier (docs/design.md, "Recovery"). Calls wait until it is done.
 * Then stdio (one client on stdin/stdout, which are the protocol channel:
 * every log line goes to stderr), or Streamable HTTP (http.ts).
 */
import type { Readable, Writable } from 'node:stream'
import { serveOneOverStdio } from './stdio.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ConfigError } from '../../core/errors.js'
import type { Interlock } from '../../core/interlock.js'
import type { RecoveryReport } from '../../core/recovery.js'
import type { McpProxyHttpConfig } from '../../core/config/types.js'
import { McpTarget } from '../../core/targets/mcp/index.js'
import type { ModuleTool } from '../../core/targets/module/define-target.js'
import { moduleToolsOf } from '../../core/targets/module/module-target.js'
import type { EffectTarget } from '../../core/targets/target.js'
import { CallDesk, type ProxyMode } from './calls.js'
import { ThreadReads } from './reads.js'
import type { Principal } from './principal.js'
import { ProxySession, type ClientReach, type ThreadChoice } from './session.js'

export interface McpProxyOptions {
  interlock: Interlock
  /** The [targets.<name>] to stand in front of; default: the config's only mcp target. */
  target?: string
  mode: ProxyMode
  /** Outbox mode: longest wait for a relay's outcome (default 30 s). */
  waitMs?: number
  /** The default thread of every session (--thread): "per-session", "per-client" or a name; default: the target's `thread`. */
  thread?: ThreadChoice
  log: (line: string) => void
}

export class McpProxy {
  private readonly sessions = new Set<ProxySession>()

  private constructor(
    readonly interlock: Interlock,
    readonly target: McpTarget,
    private readonly desk: CallDesk,
    private readonly reads: ThreadReads,
    private readonly ready: Promise<void>,
    private readonly log: (line: string) => void,
    private readonly thread: ThreadChoice,
  ) {}

  static async start(o: McpProxyOptions): Promise<McpProxy> {
    const target = mcpTargetOf(o.interlock, o.target)
    await target.loadTools().catch((e: Error) => {
      throw new ConfigError(e.message.startsWith(`${target.where} `) ? e.message : `${target.where}: ${e.message}`, [], { hint: target.unreachableHint, cause: e })
    })
    const unknown = target.unknownTools()
    if (unknown.length > 0) {
      throw new ConfigError(`${o.interlock.config.file ?? 'interlock.toml'} declares tools the server does not have`, unknown, {
        hint: 'Fix the tool names under [targets.<name>.tools]; `interlock check` lists the server\'s tools with their tiers.',
      })
    }
    const premiseTools = new Set(Object.values(target.config.tools).flatMap((t) => t.restsOn.map((r) => r.tool)))
    const reads = new ThreadReads(premiseTools, o.interlock.store, target.name)
    const desk = new CallDesk({ interlock: o.interlock, target, mode: o.mode, waitMs: o.waitMs ?? 30_000, reads, log: o.log })
    // Recovery goes through the target's own session; then it is ended: clients' calls go through their own.
    const ready = (o.mode === 'inline' ? recoverTarget(o.interlock, target.name, o.log) : Promise.resolve()).then(() => target.idle())
    const proxy = new McpProxy(o.interlock, target, desk, reads, ready, o.log, o.thread ?? target.config.thread)
    const journaled = target.decisions().filter((d) => d.tier !== 'read')
    o.log(`mcp-proxy: ${target.name}: ${target.decisions().length} tools, ${journaled.length} through the gate (${o.mode}): ${journaled.map((d) => `${d.tool} (tier ${d.tier})`).join(', ') || 'none'}`)
    return proxy
  }

  /**
   * Serves one client over stdio until it goes away: its end of the pipe
   * closed (the SDK's transport does not end on EOF by itself, and a host
   * that just closes the pipe, or dies, must not leave a proxy and a server
   * behind per session), or `stop` aborted (SIGTERM, SIGINT).
   */
  serveStdio(input: Readable = process.stdin, output: Writable = process.stdout, stop?: AbortSignal): Promise<void> {
    return serveOneOverStdio((t, id, who) => this.serve(t, id, who), input, output, stop)
  }


  /**
   * Serves one client's session on a transport (a stdio pipe, or one
   * Streamable HTTP session), as `principal`; `reach` says when the client
   * can be sent the server's requests (HTTP: while its GET stream is open).
   */
  async serve(transport: Transport, sessionId: string, principal: Principal, reach?: ClientReach): Promise<void> {
    const session = new ProxySession({ target: this.target, desk: this.desk, reads: this.reads, ready: this.ready, log: this.log, thread: this.thread }, transport, { sessionId, principal, reach })
    this.sessions.add(session)
    try {
      await session.run()
    } finally {
      this.sessions.delete(session)
    }
  }

  /** Recovery at start (inline mode): done when this resolves. */
  whenReady(): Promise<void> {
    return this.ready
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.sessions].map((s) => s.close()))
    await this.target.close()
  }
}

/**
 * What mcp-proxy stands in front of: an `mcp` target (its upstream server),
 * or a `module` target whose module declares tools. Named by --target, else
 * the only mcp target, else the only module target with tools.
 */
export type ProxiedTarget = { kind: 'mcp'; target: McpTarget } | { kind: 'module'; target: EffectTarget; tools: Readonly<Record<string, ModuleTool>>; proxyHttp?: McpProxyHttpConfig }

export function proxiedTargetOf(interlock: Interlock, name: string | undefined): ProxiedTarget {
  const withTools = (t: EffectTarget | undefined) => (t ? moduleToolsOf(t) : undefined)
  const moduleTarget = (t: EffectTarget): ProxiedTarget => {
    const settings = interlock.config.targets[t.name]
    return { kind: 'module', target: t, tools: withTools(t)!, ...(settings?.type === 'module' && settings.proxyHttp ? { proxyHttp: settings.proxyHttp } : {}) }
  }
  if (name !== undefined) {
    const t = interlock.targets.get(name)
    if (t && !(t instanceof McpTarget) && withTools(t)) return moduleTarget(t)
    if (t && interlock.config.targets[name]?.type === 'module') {
      throw new ConfigError(`targets.${name}: its module declares no tools for mcp-proxy to serve`, [`targets.${name}.module: add tools to its defineTarget({ ... }) (docs/targets.md, "Your own code: target modules")`], { hint: 'Declare the actions an agent may call as tools in the module, or name an mcp target with --target.' })
    }
    return { kind: 'mcp', target: mcpTargetOf(interlock, name) }
  }
  const mcp = [...interlock.targets.values()].filter((t) => t instanceof McpTarget)
  const modules = [...interlock.targets.values()].filter((t) => !(t instanceof McpTarget) && withTools(t))
  if (mcp.length === 0 && modules.length === 1) return moduleTarget(modules[0]!)
  return { kind: 'mcp', target: mcpTargetOf(interlock, name) }
}

export function mcpTargetOf(interlock: Interlock, name: string | undefined): McpTarget {
  const mcp = [...interlock.targets.values()].filter((t): t is McpTarget => t instanceof McpTarget)
  if (name !== undefined) {
    const t = interlock.targets.get(name)
    if (!t) throw new ConfigError(`there is no [targets.${name}] in ${interlock.config.file ?? 'interlock.toml'}`, [], { hint: `Targets of type "mcp": ${mcp.map((m) => m.name).join(', ') || 'none'}.` })
    if (!(t instanceof McpTarget)) throw new ConfigError(`targets.${name} is not of type "mcp"`, [`targets.${name}.type: must be "mcp" (or "module", with tools) for mcp-proxy`], { hint: 'Name an mcp target, or a module target whose module declares tools, with --target.' })
    return t
  }
  if (mcp.length === 1) return mcp[0]!
  throw new ConfigError(mcp.length === 0 ? 'interlock.toml has no target of type "mcp"' : `interlock.toml has ${mcp.length} targets of type "mcp" (${mcp.map((m) => m.name).join(', ')})`, [], {
    hint: mcp.length === 0 ? 'Add a [targets.<name>] with type = "mcp" and the server\'s command or url.' : 'Say which with --target <name>.',
  })
}

/** Inline mode's recovery at start: the named target's effects, by tier (an mcp target's through its own session). */
export async function recoverTarget(interlock: Interlock, target: string, log: (line: string) => void): Promise<void> {
  let report: RecoveryReport
  try {
    report = await interlock.gate.recover({ filter: (s) => s.effect.target === target })
  } catch (e) {
    log(`mcp-proxy: recovery failed: ${(e as Error).message}; calls are answered from the journal as it stands`)
    return
  }
  for (const e of report.effects) {
    log(`mcp-proxy: recovered ${e.effectId.slice(0, 12)} (${e.found}, tier ${e.tier}): ${e.action}${e.outcome ? ` → ${e.outcome.status}` : ''}${e.error ? `: ${e.error}` : ''}`)
  }
}
