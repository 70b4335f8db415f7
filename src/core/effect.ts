/**
 * Glossary
 * - effect: one side effect an agent asks for: a target, an action, arguments.
 * - premises: what the agent read when it decided; re-checked right before dispatch.
 * - thread: the agent run the effect belongs to; also the name of its journal.
 * - key: an optional caller-chosen discriminator, for two deliberately identical effects.
 * - principal: who asked, when the caller says (the MCP gateway's callers); part of the id, so
 *   one principal's effects are never another's.
 * - trace: the W3C trace context of the request that asked; journaled, not part of the id.
 * - effect id: the hash below; the same decision re-executed after a crash gets the same id.
 * - tier: what the target can promise (1 idempotent, 2 queryable, 3 neither).
 * - receipt: what the target returned when the effect landed.
 */
import { canonicalJson, identityJson, type JsonObject, type JsonValue } from './canonical-json.js'
import { InputError } from './errors.js'
import { sha256Hex } from './hash.js'
import type { State } from './lifecycle.js'
import { checkTraceContext, type TraceContext } from './trace-context.js'

export type Tier = 1 | 2 | 3
export type Premises = JsonObject
export type Receipt = JsonObject

/** What a caller submits. */
export interface EffectInput {
  thread: string
  target: string
  action: string
  args: JsonObject
  premises?: Premises
  key?: string
  /** Who asked: `user:<login>`, `token:<name>`, `oauth:<iss>#<sub>` (integrations/mcp/principal.ts). Part of the id. */
  principal?: string
  /** The W3C trace context of the request that asked. Journaled, not part of the id. */
  trace?: TraceContext
}

/** An effect as the gate and the targets see it: validated, with its id. */
export interface Effect {
  id: string
  thread: string
  target: string
  action: string
  args: JsonObject
  premises: Premises
  key?: string
  principal?: string
  trace?: TraceContext
}

/** The current state of a journaled effect. */
export interface EffectSnapshot {
  effect: Effect
  tier: Tier
  state: State
  /** Sequence number of the last record for this effect in its journal. */
  seq: number
  /** Data of the last record (receipt, violations, reason...). */
  detail: JsonObject
  createdAt: string
  updatedAt: string
}

// `_` too: MCP tool names (an mcp target's actions) use it, as in `edit_file`.
/** A thread's, target's or action's name. */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/_-]{0,199}$/
// An OAuth subject is the issuer's to choose: any printable text, bounded.
const PRINCIPAL = /^[^\0-\x1f\x7f]{1,300}$/

/**
 * The effect id: lowercase hex SHA-256 of the identity JSON (canonical JSON
 * with every string and key in NFC, see canonical-json.ts) of
 * `{"action","args","key","target","thread"}`, with `key` null when absent,
 * and `"principal"` beside them when the effect has one (so the ids of
 * effects without one are what they always were). Two principals making the
 * same call in a thread of the same name make two effects: one can never
 * join, replay or read the other's (docs/design.md, "Callers").
 * NFC is for identity only: the same text typed composed or decomposed is one
 * effect, while the args are journaled and sent exactly as submitted.
 * Premises are deliberately left out: the same decision made on a changed
 * world is the same effect, and its premises are what reject it.
 */
export function effectId(input: Pick<EffectInput, 'thread' | 'target' | 'action' | 'args' | 'key' | 'principal'>): string {
  const identity: JsonObject = {
    thread: input.thread,
    target: input.target,
    action: input.action,
    args: input.args,
    key: input.key ?? null,
  }
  if (input.principal !== undefined) identity.principal = input.principal
  return sha256Hex(identityJson(identity))
}

/** Validate a submitted effect at the edge and give it its id. */
export function toEffect(input: EffectInput): Effect {
  if (input === null || typeof input !== 'object') throw new InputError('an effect must be an object')
  for (const field of ['thread', 'target', 'action'] as const) {
    const v = input[field]
    if (typeof v !== 'string' || !NAME.test(v)) {
      throw new InputError(`effect.${field} must be a name of 1-200 letters, digits or ._:@/_- (got ${JSON.stringify(v)})`)
    }
  }
  if (input.key !== undefined && (typeof input.key !== 'string' || input.key.length === 0 || input.key.length > 200)) {
    throw new InputError(`effect.key must be a non-empty string of at most 200 characters`)
  }
  if (input.principal !== undefined && (typeof input.principal !== 'string' || !PRINCIPAL.test(input.principal))) {
    throw new InputError(`effect.principal must be a string of 1-300 printable characters`)
  }
  const trace = input.trace === undefined ? undefined : checkTraceContext(input.trace)
  if (!isPlainObject(input.args)) throw new InputError(`effect.args must be an object`)
  if (input.premises !== undefined && !isPlainObject(input.premises)) throw new InputError(`effect.premises must be an object`)
  // canonicalJson refuses anything that is not JSON, naming the path (and effectId, below, keys that collide under NFC).
  canonicalJson(input.args)
  if (input.premises) canonicalJson(input.premises)
  const effect: Effect = {
    id: effectId(input),
    thread: input.thread,
    target: input.target,
    action: input.action,
    args: input.args,
    premises: input.premises ?? {},
  }
  if (input.key !== undefined) effect.key = input.key
  if (input.principal !== undefined) effect.principal = input.principal
  if (trace) effect.trace = trace.tracestate === undefined ? { traceparent: trace.traceparent } : { traceparent: trace.traceparent, tracestate: trace.tracestate }
  return effect
}

/** The effect as journaled: exactly its fields, `key`, `principal` and `trace` only when present. */
export function effectJson(effect: Effect): JsonObject {
  const e: JsonObject = {
    id: effect.id,
    thread: effect.thread,
    target: effect.target,
    action: effect.action,
    args: effect.args,
    premises: effect.premises,
  }
  if (effect.key !== undefined) e.key = effect.key
  if (effect.principal !== undefined) e.principal = effect.principal
  if (effect.trace !== undefined) e.trace = { ...effect.trace }
  return e
}

function isPlainObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

export type { JsonObject, JsonValue }
