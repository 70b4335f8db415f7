/**
 * A side-effecting tool call, through the gate: which effect it is
 * (occurrence.ts), what it rests on (premises from what the thread read),
 * then the gate, and the answer by where the effect stands (answers.ts).
 *
 * Two ways to run, as for any agent (docs/design.md, "Two ways to run"):
 * - inline: this process journals and sends, through the session the call
 *   came in on; a call found in flight that nobody here is working on (a
 *   crash earlier, or a held call operators have since released) is carried
 *   on here, as recovery would;
 * - outbox: this process only proposes; relays (`interlock relay`) decide
 *   and send; the answer is what the effect has come to within `waitMs`.
 *
 * A call identical to one in progress here joins it and gets its answer.
 *
 * Every call is its principal's: the principal is part of the effect's id
 * (core/effect.ts), so threads, keys, joins and replays are each caller's
 * own. A caller key names one call: the same key with other arguments (or
 * another tool) in the same thread is refused, naming the effect the key
 * belongs to, before anything is journaled or sent.
 */
import { context } from '@opentelemetry/api'
import { contextOfTrace, inSpan, SpanKind } from '../../core/tracing/spans.js'
import { traceContextOf } from '../../core/trace-context.js'
import type { Progress } from '@modelcontextprotocol/sdk/types.js'
import type { JsonObject } from '../../core/canonical-json.js'
import { effectId, type EffectInput } from '../../core/effect.js'
import { InputError, isInterlockError } from '../../core/errors.js'
import type { Interlock } from '../../core/interlock.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import type { McpTarget, Read, UpstreamLink } from '../../core/targets/mcp/index.js'
import { answerOf } from './answers.js'
import { readCallMeta } from './meta.js'
import type { Principal } from './principal.js'
import { submitAndCarry, type RunMode } from '../agent/carry.js'
import { refusedWords } from '../agent/words.js'
import { chooseOccurrence } from '../agent/occurrence.js'
import type { ThreadReads } from './reads.js'
import { DEFAULTS } from '../../core/config/defaults.js'
import { parseDuration } from '../../core/config/policy.js'

export type ProxyMode = RunMode

export interface DeskOptions {
  interlock: Interlock
  target: McpTarget
  mode: ProxyMode
  /** Outbox mode: the longest wait for a relay's outcome before answering "in flight". */
  waitMs: number
  reads: ThreadReads
  log: (line: string) => void
  now?: () => number
}

/** Where the call came from: its session's server connection, its caller, its thread, its progress token. */
export interface CallOrigin {
  link: UpstreamLink
  principal: Principal
  defaultThread: string
  onprogress?: (progress: Progress) => void
  /** Reads through the call's session (premises not read by the agent are read here). */
  read: (r: Read) => Promise<JsonObject>
}

const DEFAULT_DEDUPE = { dedupe: DEFAULTS.mcpDedupe, dedupeWindowMs: parseDuration(DEFAULTS.mcpDedupeWindow) }

export class CallDesk {
  private readonly inflight = new Map<string, Promise<JsonObject>>()
  /** Caller keys of calls in progress here (principal, thread, target and key → effect id): a key's other call is refused before it is journaled. */
  private readonly keysInFlight = new Map<string, string>()
  private readonly now: () => number

  constructor(private readonly o: DeskOptions) {
    this.now = o.now ?? Date.now
  }

  /** Answers one journaled tools/call; throws an McpError only to pass on the server's own JSON-RPC error. */
  call(params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown>; idempotencyKey?: unknown }, origin: CallOrigin): Promise<JsonObject> {
    // One span per journaled call, a child of the caller's trace when its _meta carries one (SEP-414).
    const parent = contextOfTrace(traceContextOf(params._meta)) ?? context.active()
    return inSpan('interlock.mcp.call', { 'interlock.target': this.o.target.name, 'interlock.tool': params.name, 'interlock.principal': origin.principal.id, 'interlock.journaled': true }, () => this.callNow(params, origin), { parent, kind: SpanKind.SERVER })
  }

  private async callNow(params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown>; idempotencyKey?: unknown }, origin: CallOrigin): Promise<JsonObject> {
    const { target, interlock } = this.o
    const tool = params.name
    let input: EffectInput
    let id: string
    let isNew: boolean
    let passOn: Record<string, unknown>
    // The caller key this call holds in keysInFlight, from before its first await until it is answered.
    let held: string | undefined
    const release = () => {
      if (held !== undefined) this.keysInFlight.delete(held)
    }
    try {
      const meta = readCallMeta(params._meta, params.idempotencyKey)
      passOn = meta.passOn
      const args = (params.arguments ?? {}) as JsonObject
      const base = { thread: meta.thread ?? origin.defaultThread, target: target.name, action: tool, args, principal: origin.principal.id }
      if (meta.key !== undefined) held = await this.holdKey(base, meta.key)
      const o = await chooseOccurrence(base, meta, target.toolConfig(tool) ?? DEFAULT_DEDUPE, {
        get: (effect) => interlock.store.get(effect),
        inProgress: (effect) => this.inflight.has(effect),
        now: this.now,
      })
      id = o.id
      isNew = !o.existing && !this.inflight.has(id)
      input = o.key === undefined ? base : { ...base, key: o.key }
      // Journaled with the effect when it is proposed now; a call answered from the journal keeps the first's.
      if (meta.trace) input.trace = meta.trace
      if (o.why !== 'new') this.o.log(`${tool}: effect ${id.slice(0, 12)}: ${o.why}`)
    } catch (e) {
      release()
      return refusal(e, interlock)
    }
    const running = this.inflight.get(id)
    if (running) {
      release()
      return running
    }
    const work = this.carry(input, id, isNew, tool, passOn, origin)
    this.inflight.set(id, work)
    const forget = () => {
      this.inflight.delete(id)
      release()
    }
    work.then(forget, forget)
    return work
  }

  /**
   * A caller key belongs to the first call made with it in its thread (of
   * its principal, on this target): another call with it (other arguments,
   * another tool) is the caller's mistake, refused naming the effect the key
   * belongs to, as SEP-3182 proposed (a reused key with different arguments
   * is an error: never a second effect, never the first's result). The same
   * call again is the same effect (a retry, or a join while it is in
   * progress). Taken here before anything is awaited, so two calls racing
   * in this process are told apart too; the journal says who had it before.
   * Returns the key's scope when this call now holds it in keysInFlight.
   */
  private async holdKey(base: Omit<EffectInput, 'key' | 'premises'>, key: string): Promise<string | undefined> {
    const scope = JSON.stringify([base.principal, base.thread, base.target, key])
    const id = effectId({ ...base, key })
    const here = this.keysInFlight.get(scope)
    if (here !== undefined && here !== id) throw keyReused(key, here)
    const held = here === undefined ? scope : undefined
    if (held) this.keysInFlight.set(held, id)
    try {
      const journaled = await this.o.interlock.store.list({ thread: base.thread, target: base.target, principal: base.principal, key, limit: 2 })
      const other = journaled.map((s) => s.effect.id).find((x) => x !== id)
      if (other !== undefined) throw keyReused(key, other)
    } catch (e) {
      if (held) this.keysInFlight.delete(held)
      throw e
    }
    return held
  }

  private async carry(input: EffectInput, id: string, isNew: boolean, tool: string, passOn: Record<string, unknown>, origin: CallOrigin): Promise<JsonObject> {
    const { target, interlock } = this.o
    let live: JsonObject | undefined
    const unbind = target.bindCall(id, { link: origin.link, onprogress: origin.onprogress, meta: passOn, onResult: (r) => (live = r) })
    try {
      let outcome: SubmitOutcome
      try {
        // Premises only for a call not journaled yet: a journaled one keeps those it was proposed with.
        const of = { principal: origin.principal.id, thread: input.thread }
        const premises = isNew ? await target.premisesFor(tool, input.args, (r) => this.o.reads.recall(of, r), origin.read) : undefined
        const submitted = premises ? { ...input, premises } : input
        outcome = await this.submit(submitted, isNew)
      } catch (e) {
        return refusal(e, interlock)
      }
      return answerOf({ outcome, tool, target: target.name, live, scrub: (t) => interlock.scrub(t), outputSchema: target.declaresOutput(tool) })
    } finally {
      unbind()
    }
  }

  private async submit(input: EffectInput, isNew: boolean): Promise<SubmitOutcome> {
    return submitAndCarry(this.o.interlock, input, { mode: this.o.mode, waitMs: this.o.waitMs, isNew, log: this.o.log })
  }
}

function keyReused(key: string, effect: string): InputError {
  return new InputError(`idempotency key reused with different arguments: key ${JSON.stringify(key)} belongs to effect ${effect}, another call in this thread`, {
    hint: 'Give each call its own key; to ask for that effect again, repeat its call exactly (same tool, same arguments, same key).',
    context: { key, effectId: effect },
  })
}

/** A call refused before or by the gate for what it is (bad arguments, a secret in them): a tool error the model can read. */
function refusal(e: unknown, interlock: Interlock): JsonObject {
  if (e instanceof InputError || (isInterlockError(e) && e.exitCode === 2)) {
    return { content: [{ type: 'text', text: refusedWords(e.message, interlock).text }], isError: true }
  }
  throw e
}
