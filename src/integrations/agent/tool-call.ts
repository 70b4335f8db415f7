/**
 * One side-effecting tool call of an agent, through Interlock: which effect
 * it is, what it rests on, the gate (or the outbox), and what the model is
 * told. Every framework adapter is this plus the framework's own shapes.
 *
 * Which effect: a framework's own call id, when it survives a resume (a
 * LangGraph tool_call_id from a checkpointed message, an Agents SDK callId in
 * a saved RunState), names it: the same id is the same effect, a new call a
 * new one. Without one, the call's content does (occurrence.ts), and the
 * tool's `dedupe` tells a retry from a repeat.
 */
import type { JsonObject } from '../../core/canonical-json.js'
import type { EffectInput, EffectSnapshot, Premises, Receipt } from '../../core/effect.js'
import { InputError, isInterlockError } from '../../core/errors.js'
import type { Interlock } from '../../core/interlock.js'
import type { OutcomeStatus, SubmitOutcome } from '../../core/outcome.js'
import { submitAndCarry, type RunMode } from './carry.js'
import { chooseOccurrence, type Dedupe } from './occurrence.js'
import { callKey } from './thread-name.js'
import { doneWords, notDoneWords, refusedWords, type Wording, type Words } from './words.js'

export interface ToolCall {
  /** The Interlock thread (threadName()). */
  thread: string
  target: string
  action: string
  args: JsonObject
  /** The tool's name as the model knows it (default: the action). */
  tool?: string
  /** Who asks (an MCP gateway's caller): journaled with the effect and part of its id. */
  principal?: string
  /** The framework's own id for this call, given only when it is stable across a resume. */
  callId?: string
  /**
   * True when the same call made again (same arguments, a new call id) would
   * be a new effect, as when the call id alone names it; the model is then
   * not told to call again for a held or in-flight call's result. Default:
   * an identical call later finds this one (by content, or an adapter that
   * looks the open call up).
   */
  againIsNew?: boolean
  /** Without a callId: how a repeat of an identical call is told from a retry (default: always a retry within 10 minutes). */
  dedupe?: Dedupe
  /** Without a callId: this call is a retry of the last identical one. */
  retry?: boolean
  /**
   * Without a callId: how many identical calls the conversation already
   * shows done (their result reached the model). Those effects are not this
   * call's; an identical one made since and not shown (a re-execution after a
   * crash) is (occurrence.ts). Replaces `dedupe`.
   */
  seen?: number
  /**
   * What the decision rests on, journaled with a new effect and checked right
   * before it is sent: the values, a function of the arguments, or 'capture'
   * to have the target read them now.
   */
  premises?: Premises | 'capture' | ((args: JsonObject) => Premises | undefined | Promise<Premises | undefined>)
  /** The result shown to the model for a COMMITTED effect (default: the receipt as JSON). */
  result?: (receipt: Receipt) => string
}

export interface CallOptions {
  /** inline (default): this process sends; outbox: relays send. */
  mode?: RunMode
  /** Outbox mode: how long to wait for a relay before answering "in flight" (default 30 s). */
  waitMs?: number
  log?: (line: string) => void
  now?: () => number
}

/** What a tool declared through an adapter is told of its calls: where they go, and what they rest on. */
export interface GatedCallOptions<Input> extends CallOptions {
  interlock: Interlock
  /** The [targets.<name>] that makes the effect, and its action. */
  target: string
  action: string
  /** The target's arguments from the model's input (default: the input as is). */
  args?: (input: Input) => JsonObject
  /** What the decision rests on (ToolCall.premises): checked right before the effect is sent. */
  premises?: ToolCall['premises']
  /** The text the model gets for a COMMITTED effect (default: the receipt as JSON). */
  result?: ToolCall['result']
}

export interface ToolAnswer extends Words {
  status: OutcomeStatus | 'refused'
  effectId?: string
  /** True when the effect had been journaled before this call (a re-execution, a retry). */
  replayed: boolean
  /** COMMITTED: what the service answered. */
  receipt?: Receipt
  outcome?: SubmitOutcome
}

export interface Identified {
  input: EffectInput
  id: string
  existing?: EffectSnapshot
  why: string
}

const DEFAULT_DEDUPE: Dedupe = { dedupe: 'window', dedupeWindowMs: 10 * 60_000 }
const DEFAULT_WAIT_MS = 30_000

/** Calls in progress in this process, per Interlock: an identical call joins the first. */
const inProgress = new WeakMap<Interlock, Map<string, Promise<ToolAnswer>>>()

function running(interlock: Interlock): Map<string, Promise<ToolAnswer>> {
  let m = inProgress.get(interlock)
  if (!m) inProgress.set(interlock, (m = new Map()))
  return m
}

/** Which effect the call is, and the effect as journaled if it is already. */
export async function identify(interlock: Interlock, call: ToolCall, options: Pick<CallOptions, 'now'> = {}): Promise<Identified> {
  const base = { thread: call.thread, target: call.target, action: call.action, args: call.args, ...(call.principal === undefined ? {} : { principal: call.principal }) }
  const m = running(interlock)
  if (call.callId !== undefined) {
    const input: EffectInput = { ...base, key: callKey(call.callId) }
    const o = await chooseOccurrence(base, { key: input.key, retry: false }, DEFAULT_DEDUPE, { get: (id) => interlock.store.get(id), inProgress: (id) => m.has(id), now: options.now ?? Date.now })
    return { input, id: o.id, existing: o.existing, why: 'the call id' }
  }
  const o = await chooseOccurrence(base, { retry: call.retry ?? false, seen: call.seen }, call.dedupe ?? DEFAULT_DEDUPE, {
    get: (id) => interlock.store.get(id),
    inProgress: (id) => m.has(id),
    now: options.now ?? Date.now,
  })
  return { input: o.key === undefined ? base : { ...base, key: o.key }, id: o.id, existing: o.existing, why: o.why }
}

/** Runs the call's effect through Interlock and says what came of it; never throws for the caller's mistakes (those are REFUSED). */
export async function runToolCall(interlock: Interlock, call: ToolCall, options: CallOptions = {}): Promise<ToolAnswer> {
  const wording = { tool: call.tool ?? call.action, target: call.target, scrub: (t: string) => interlock.scrub(t), againIsNew: call.againIsNew }
  let found: Identified
  try {
    found = await identify(interlock, call, options)
  } catch (e) {
    return refused(e, wording)
  }
  const m = running(interlock)
  const joined = m.get(found.id)
  if (joined) return joined
  const work = carry(interlock, call, found, options, wording)
  m.set(found.id, work)
  const forget = () => m.delete(found.id)
  work.then(forget, forget)
  return work
}

async function carry(interlock: Interlock, call: ToolCall, found: Identified, options: CallOptions, wording: Wording): Promise<ToolAnswer> {
  const isNew = !found.existing
  let outcome: SubmitOutcome
  try {
    // Premises only for a call not journaled yet: a journaled one keeps those it was proposed with.
    const premises = isNew ? await premisesOf(interlock, call) : undefined
    const input = premises ? { ...found.input, premises } : found.input
    outcome = await submitAndCarry(interlock, input, { mode: options.mode ?? 'inline', waitMs: options.waitMs ?? DEFAULT_WAIT_MS, isNew, log: options.log })
  } catch (e) {
    return refused(e, wording)
  }
  const replayed = !isNew
  if (outcome.status === 'committed') {
    const words = doneWords(outcome, !sentBefore(found.existing), wording, call.result?.(outcome.receipt))
    return { ...words, status: 'committed', effectId: outcome.effectId, replayed, receipt: outcome.receipt, outcome }
  }
  return { ...notDoneWords(outcome, wording), status: outcome.status, effectId: outcome.effectId, replayed, outcome }
}

/**
 * Whether the effect had been sent before this call: a re-execution after a
 * crash, a retry. One journaled but never sent (held, then released; or
 * returned, the service having done nothing) is made by this call.
 */
function sentBefore(existing: EffectSnapshot | undefined): boolean {
  return existing !== undefined && !['PROPOSED', 'HELD', 'AUTHORIZED'].includes(existing.state)
}

async function premisesOf(interlock: Interlock, call: ToolCall): Promise<Premises | undefined> {
  const p = call.premises
  if (p === undefined) return undefined
  if (p === 'capture') return interlock.gate.capture(call.target, call.action, call.args)
  if (typeof p === 'function') return p(call.args)
  return p
}

/** Refused for what it is (bad arguments, a secret, an unknown target): a tool error the model can read. Anything else is Interlock's own failure and is thrown. */
function refused(e: unknown, wording: { scrub: (t: string) => string }): ToolAnswer {
  if (e instanceof InputError || (isInterlockError(e) && e.exitCode === 2)) {
    return { ...refusedWords((e as Error).message, wording), status: 'refused', replayed: false }
  }
  throw e
}
