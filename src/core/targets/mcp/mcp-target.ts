/**
 * An MCP server as an effect target: each action is one of its tools, `apply`
 * is `tools/call`. One target, one gate: the journal, policy holds, operator
 * releases, relays and reconcile-effects work for tool calls as for any
 * other effect.
 *
 * Tiers are per tool (tierOf, tiers.ts): declared under
 * [targets.<name>.tools.<tool>], else from the tool's annotations. What the
 * call sends is the journaled arguments, plus, where declared, the effect id
 * in `key_arg` (tier 1: the server deduplicates on it) or at `mark` (a marker
 * a tier-2 `query` finds again), and `_meta["interlock/effect"]` = the
 * effect id on every call, for servers that can use it. An effect that
 * carries a W3C trace context sends it as `_meta.traceparent` /
 * `tracestate`, so the server's span joins the trace of the call that asked
 * (the proxy's client's own `_meta`, when the call is made for it, goes on
 * as it came).
 *
 * Connections: the target opens its own session with the server when it
 * first needs one (a relay, recovery, `interlock check`). The proxy binds
 * each call it submits to the session its client came in on (bindCall):
 * progress, sampling and elicitation during the call reach the client that
 * made it, and the server's result reaches it as sent, before it is
 * journaled.
 */
import type { Progress } from '@modelcontextprotocol/sdk/types.js'
import type { JsonObject, JsonValue } from '../../canonical-json.js'
import type { McpTargetConfig, McpToolConfig } from '../../config/types.js'
import type { Effect, Premises, Receipt, Tier } from '../../effect.js'
import { ConfigError, DispatchFault, InputError } from '../../errors.js'
import { passFence } from '../fence.js'
import type { ApplyContext, EffectTarget, ProbeResult } from '../target.js'
import type { UpstreamConnection, UpstreamHooks } from './connection.js'
import { UpstreamLink } from './link.js'
import { startHint } from './start-hint.js'
import { capturePremises, premiseViolations, readsFor, type Read, type Remembered } from './premises.js'
import { probeMcp } from './probe.js'
import { receiptOf } from './receipt.js'
import { at, expand, expandText, placeholdersIn } from './template.js'
import { decideTier, tierText, type TierDecision, type ToolListing } from './tiers.js'

/**
 * What this target's own sessions (the tool list at start, recovery,
 * `interlock check`) say they can do: sampling and elicitation, so that a
 * server that lists some tools only to clients able to serve them lists them
 * all, and every declared tool can be checked; what such a server asks of
 * these sessions is answered "method not found": there is no person or model
 * behind them. Not roots: a client that declares roots must answer
 * roots/list (modelcontextprotocol.io/specification/2025-06-18/client/roots),
 * and these sessions have none to give. An empty list would say there is no
 * place the server may work; declaring none lets it use what it was started
 * with (server-filesystem: the folders in its arguments). A client's own
 * session declares roots when that client does (integrations/mcp/session.ts).
 */
export const LISTING_CAPABILITIES = { sampling: {}, elicitation: { form: {}, url: {} } }

/** The `_meta` key every call carries its effect id under. */
export const EFFECT_META = 'interlock/effect'

export interface McpTargetOptions {
  /** Resolved `${VAR}` values: kept out of messages. */
  secrets?: readonly string[]
}

/** Where one submitted call goes, and who hears of it (the proxy's client). */
export interface CallRoute {
  link?: UpstreamLink
  onprogress?: (progress: Progress) => void
  /** The client's own `_meta`, passed on with the call (not journaled). */
  meta?: Record<string, unknown>
  /** The server's result as it came, before it is journaled (a tool error's too). */
  onResult?: (result: JsonObject) => void
}

export class McpTarget implements EffectTarget {
  /** The tier of a tool that declares nothing and says nothing; tierOf decides per tool. */
  readonly tier: Tier = 3
  readonly notCompensable = 'an MCP tool call has no undo the protocol knows of; call the tool that undoes it, as a new call'
  private readonly own: UpstreamLink
  private listing?: Map<string, ToolListing>
  private readonly routes = new Map<string, CallRoute>()

  constructor(
    readonly name: string,
    readonly config: McpTargetConfig,
    readonly options: McpTargetOptions = {},
  ) {
    checkSettings(name, config)
    this.own = this.link({ capabilities: LISTING_CAPABILITIES, stderr: 'inherit' })
  }

  get where(): string {
    return `target ${this.name}`
  }

  /** What to check when the server does not start or answer: command, environment and start time (stdio), or url. */
  get unreachableHint(): string {
    return startHint(`targets.${this.name}`, this.config)
  }

  /** A session with the server, opened at first use (a proxy client's, this target's own, a probe's). */
  link(hooks: UpstreamHooks, onOpen?: ConstructorParameters<typeof UpstreamLink>[3]): UpstreamLink {
    // Set on the hooks as given, not copied: a proxy session's capabilities are getters, read when the session opens.
    hooks.configKey ??= `targets.${this.name}`
    return new UpstreamLink(this.config, this.where, hooks, onOpen)
  }

  /** Routes one submitted call (by its effect id) until the returned function is called. */
  bindCall(effectId: string, route: CallRoute): () => void {
    this.routes.set(effectId, route)
    return () => {
      if (this.routes.get(effectId) === route) this.routes.delete(effectId)
    }
  }

  /**
   * Tools as the server lists them (tools/list), for tiers and `check`. Lists
   * from several sessions add up: a server may list a tool only to clients
   * that can serve it (sampling, elicitation), and a tool once listed keeps
   * its tier; one called after it went away is refused by the server itself.
   */
  addTools(tools: readonly Record<string, unknown>[]): void {
    this.listing ??= new Map()
    for (const t of tools) if (typeof t.name === 'string') this.listing.set(t.name, t as unknown as ToolListing)
  }

  /** Reads the tool list through this target's own session. */
  async loadTools(): Promise<void> {
    const conn = await this.own.get()
    this.addTools(await conn.listTools())
  }

  get toolsKnown(): boolean {
    return this.listing !== undefined
  }

  /** Every tool the server lists, and every one declared, with its tier and why. */
  decisions(): TierDecision[] {
    const names = new Set([...(this.listing?.keys() ?? []), ...Object.keys(this.config.tools)])
    return [...names].sort().map((n) => decideTier(n, this.config.tools[n], this.listing?.get(n)))
  }

  /** How a tool goes through the gate; undefined for a tool the server does not list and nobody declared. */
  decision(tool: string): TierDecision | undefined {
    const declared = this.config.tools[tool]
    if (!declared && this.listing && !this.listing.has(tool)) return undefined
    if (!declared && !this.listing) throw new InputError(`${this.where}: the tool list of the server has not been read yet; tool ${tool} has no declared tier`)
    return decideTier(tool, declared, this.listing?.get(tool))
  }

  /**
   * Declarations naming tools the server does not list, as key paths of
   * interlock.toml: a tier that cannot apply to anything, or a query or a
   * premise that would fail at the first crash.
   */
  unknownTools(): string[] {
    if (!this.listing) return []
    const listed = [...this.listing.keys()].sort()
    const has = (t: string) => this.listing!.has(t)
    const them = listed.length > 20 ? `${listed.slice(0, 20).join(', ')}, …` : listed.join(', ')
    const problems: string[] = []
    const key = `targets.${this.name}.tools`
    for (const [tool, c] of Object.entries(this.config.tools)) {
      if (!has(tool)) problems.push(`${key}.${tool}: the server has no tool "${tool}" (its tools: ${them || 'none'})`)
      if (c.query && !has(c.query.tool)) problems.push(`${key}.${tool}.query.tool: the server has no tool "${c.query.tool}"`)
      c.restsOn.forEach((r, i) => {
        if (!has(r.tool)) problems.push(`${key}.${tool}.rests_on.${i}.tool: the server has no tool "${r.tool}"`)
      })
    }
    return problems
  }

  tierOf(action: string): Tier {
    const d = this.decision(action)
    if (!d) throw new InputError(`${this.where}: the server has no tool "${action}"`)
    if (d.tier === 'read') throw new InputError(`${this.where}: tool ${action} is ${tierText(d.tier)} (${d.why}): it is called directly, never journaled`)
    return d.tier
  }

  /** The server lists the tool with an outputSchema: its results must carry structuredContent unless they are errors. */
  declaresOutput(tool: string): boolean {
    const schema = this.listing?.get(tool)?.outputSchema
    return schema !== undefined && schema !== null
  }

  toolConfig(tool: string): McpToolConfig | undefined {
    return this.config.tools[tool]
  }

  /** Refuses, before anything is journaled, a call whose key or mark has nowhere to go. */
  validateArgs(action: string, args: JsonObject): void {
    const c = this.config.tools[action]
    if (!c) return
    sentArgs(c, args, '0'.repeat(64))
  }

  /** Premises read now through this target's session (the library's gate.capture). */
  capture(action: string, args: JsonObject): Promise<Premises> {
    return this.premisesFor(action, args, () => undefined, (r) => this.read(r))
  }

  /** Premises from what the agent read (remembered), else read now with `read`. */
  premisesFor(action: string, args: JsonObject, remembered: Remembered, read: (r: Read) => Promise<JsonObject>): Promise<Premises> {
    const restsOn = this.config.tools[action]?.restsOn ?? []
    return capturePremises(readsFor(restsOn, args), remembered, read)
  }

  validatePremises(effect: Effect): Promise<string[]> {
    return premiseViolations(effect.premises, (r) => this.read(r, this.routes.get(effect.id)))
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    const where = `${this.where}: tools/call ${effect.action}`
    const route = this.routes.get(effect.id)
    const c = this.config.tools[effect.action]
    let args: JsonObject
    try {
      args = c ? sentArgs(c, effect.args, effect.id) : effect.args
    } catch (e) {
      throw new DispatchFault('refused', `${where}: ${(e as Error).message}`, { cause: e })
    }
    const conn = await this.session(route, where)
    const params = { name: effect.action, arguments: args, _meta: { ...effect.trace, ...route?.meta, [EFFECT_META]: effect.id } }
    // The last word before the request is written (targets/fence.ts): the SDK writes it within request().
    passFence(ctx.fence, where)
    let result: JsonObject
    try {
      result = (await conn.request('tools/call', params, { onprogress: route?.onprogress, signal: ctx.signal })) as JsonObject
    } catch (e) {
      throw await callFault(e, where, conn.closedReason)
    }
    route?.onResult?.(result)
    if (result.isError === true) {
      throw new DispatchFault('refused', `${where}: the tool answered with an error: ${firstText(result)}`, { answer: receiptOf(result, this.config.maxResultBytes) })
    }
    return receiptOf(result, this.config.maxResultBytes)
  }

  /** Tier 2: the declared query's read; its result containing `found` means the call happened. */
  async query(effect: Effect): Promise<Receipt | null> {
    const q = this.config.tools[effect.action]?.query
    const where = `${this.where}: ${effect.action}`
    if (!q) throw new DispatchFault('unknowable', `${where}: no query is declared for this tool, so whether the call happened cannot be asked`)
    const input = { args: effect.args, effectId: effect.id }
    const read = { tool: q.tool, args: expand(q.args, input) as JsonObject }
    const result = await this.read(read, this.routes.get(effect.id))
    if (result.isError === true) throw new Error(`${where}: the query ${q.tool} answered with an error: ${firstText(result)}`)
    const found = expandText(q.found, input)
    return textOf(result).includes(found) ? { found: { tool: q.tool, args: read.args } } : null
  }

  /** `interlock check`: a session, the tool list, each tool's tier and why; nothing is called but tools/list. */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeMcp(this, signal)
  }

  /** Ends this target's own session until it is needed again (the proxy, once started, serves through its clients'). */
  idle(): Promise<void> {
    return this.own.idle()
  }

  async close(): Promise<void> {
    await this.own.close()
  }

  /** One read tool call through the call's session or this target's own. */
  async read(r: Read, route?: CallRoute): Promise<JsonObject> {
    const where = `${this.where}: tools/call ${r.tool}`
    const conn = await this.session(route, where)
    try {
      return (await conn.request('tools/call', { name: r.tool, arguments: r.args })) as JsonObject
    } catch (e) {
      throw await callFault(e, where, conn.closedReason)
    }
  }

  /** A fresh session of its own, for a probe (closed by the caller). */
  openProbeLink(): UpstreamLink {
    return this.link({ capabilities: LISTING_CAPABILITIES, stderr: 'ignore' })
  }

  private async session(route: CallRoute | undefined, where: string): Promise<UpstreamConnection> {
    try {
      return await (route?.link ?? this.own).get()
    } catch (e) {
      throw await callFault(e, where)
    }
  }
}

/** The arguments a call sends: the journaled ones, with the effect id where key_arg or mark put it. */
export function sentArgs(c: McpToolConfig, args: JsonObject, effectId: string): JsonObject {
  if (!c.keyArg && !c.mark) return args
  const sent = structuredClone(args) as JsonObject
  if (c.keyArg) sent[c.keyArg] = effectId
  if (c.mark) {
    const path = c.mark.path.split('.')
    const value = expandText(c.mark.value, { args, effectId })
    const parent = at(sent, path.slice(0, -1))
    const last = path[path.length - 1]!
    const there: JsonValue | undefined = at(sent, path)
    if (Array.isArray(there)) there.push(value)
    else if (parent !== null && typeof parent === 'object' && !Array.isArray(parent)) parent[last] = value
    else throw new InputError(`args.${c.mark.path}: the call has nowhere to carry its effect id (mark.path names no list and no field of an object)`)
  }
  return sent
}

/** A result's text: its text blocks, and its structured content as JSON. */
export function textOf(result: JsonObject): string {
  const parts = Array.isArray(result.content) ? (result.content as JsonObject[]).filter((c) => c?.type === 'text' && typeof c.text === 'string').map((c) => c.text as string) : []
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent))
  return parts.join('\n')
}

function firstText(result: JsonObject): string {
  const text = textOf(result).split('\n')[0] ?? ''
  return text.length > 300 ? `${text.slice(0, 300)}…` : text || '(no text)'
}

/** What the schema cannot see: templates that use what does not exist where they are used. */
function checkSettings(name: string, c: McpTargetConfig): void {
  const problems: string[] = []
  const key = `targets.${name}`
  if (!c.command && !c.url) problems.push(`${key}.command: give command (a stdio server) or url (Streamable HTTP)`)
  for (const [tool, t] of Object.entries(c.tools)) {
    t.restsOn.forEach((r, i) => {
      if (placeholdersIn(r.args).includes('effect_id')) problems.push(`${key}.tools.${tool}.rests_on.${i}.args: cannot use {effect_id}: premises are read before the effect exists`)
    })
    if (t.mark && !placeholdersIn(t.mark.value).includes('effect_id')) problems.push(`${key}.tools.${tool}.mark.value: must contain {effect_id}, or the mark carries nothing a query can find`)
    if (t.query) {
      const named = placeholdersIn([t.query.args, t.query.found])
      if (named.includes('effect_id') && !t.mark) problems.push(`${key}.tools.${tool}.query: looks for {effect_id}, but the call does not carry it: declare a mark`)
      else if (!named.some((p) => p === 'effect_id' || p.startsWith('args'))) problems.push(`${key}.tools.${tool}.query: names neither {effect_id} nor the call's arguments, so it cannot tell this call from any other`)
    }
  }
  if (problems.length > 0) throw new ConfigError(`target ${name} is misconfigured: ${problems.join('; ')}`, problems, { hint: 'Fix the [targets] section of interlock.toml.' })
}

/** faults.ts, which needs the SDK's error classes: loaded with the first fault (a session opened first, or failed to). */
async function callFault(...args: Parameters<typeof import('./faults.js').callFault>) {
  return (await import('./faults.js')).callFault(...args)
}
