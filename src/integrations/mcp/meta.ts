/**
 * The `_meta` fields the proxy reads on a `tools/call` and writes on its
 * result. `_meta` is MCP's place for metadata of a request or result; keys
 * with a prefix are the prefix owner's (modelcontextprotocol.io/specification/
 * 2025-06-18/basic#general-fields), so these are all `interlock/…`.
 *
 * On a call (all optional):
 * - `interlock/thread`: the journal the call belongs to (default: the
 *   target's `thread` or --thread, session.ts: one per MCP session,
 *   `mcp/<target>/<session>`, unless set otherwise). A host that restarts and replays its
 *   conversation passes the same thread, so the same calls get the same
 *   effect ids and are answered from the journal.
 * - `interlock/key`: a caller key, part of the effect id: two calls with the
 *   same thread, tool and arguments but different keys are two effects; the
 *   same key is always the same effect, and names one call: the same key
 *   with other arguments (or another tool) is refused (calls.ts). The
 *   `idempotencyKey` of the call's params, as SEP-3182 proposed it
 *   (github.com/modelcontextprotocol/modelcontextprotocol/pull/3182), is
 *   the same key.
 * - `interlock/retry`: true marks the call as a retry of the last identical
 *   one, whatever the tool's `dedupe` says.
 * - `traceparent`, `tracestate` (W3C Trace Context, as MCP hosts put them in
 *   `_meta`): passed on to the server with the rest of `_meta`, and
 *   journaled with the effect (its `trace`).
 * On a journaled call's result:
 * - `interlock/effect`: the effect id; `interlock/state`: where it stands;
 * - `interlock/replayed`: true when the result is the journal's (the call had
 *   been made before), not a fresh answer of the server.
 */
import type { JsonObject } from '../../core/canonical-json.js'
import { InputError } from '../../core/errors.js'
import { traceContextOf, type TraceContext } from '../../core/trace-context.js'

export const THREAD_META = 'interlock/thread'
export const KEY_META = 'interlock/key'
export const RETRY_META = 'interlock/retry'
export const STATE_META = 'interlock/state'
export const REPLAYED_META = 'interlock/replayed'
export { EFFECT_META } from '../../core/targets/mcp/mcp-target.js'

export interface CallMeta {
  thread?: string
  key?: string
  retry: boolean
  /** The W3C trace context of the call, when it carries a well-formed one. */
  trace?: TraceContext
  /** The rest of the client's `_meta` (not progressToken), passed on to the server. */
  passOn: Record<string, unknown>
}

/** Keys of the form the proxy gives repeats of one call itself (agent/occurrence.ts), refused as a caller's. */
const REPEAT_KEY = /^repeat-[0-9]+$/

/** A tools/call's `_meta`, and its SEP-3182 `idempotencyKey` when it has one. */
export function readCallMeta(meta: Record<string, unknown> | undefined, idempotencyKey?: unknown): CallMeta {
  const m = meta ?? {}
  const text = (k: string): string | undefined => {
    const v = m[k]
    if (v === undefined) return undefined
    if (typeof v !== 'string' || v === '') throw new InputError(`_meta["${k}"] must be a non-empty string`)
    return v
  }
  const retry = m[RETRY_META]
  if (retry !== undefined && typeof retry !== 'boolean') throw new InputError(`_meta["${RETRY_META}"] must be true or false`)
  const passOn: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(m)) if (!k.startsWith('interlock/') && k !== 'progressToken') passOn[k] = v
  const key = callerKey(text(KEY_META), idempotencyKey)
  const out: CallMeta = { thread: text(THREAD_META), retry: retry === true, passOn }
  if (key !== undefined) out.key = key
  const trace = traceContextOf(m)
  if (trace) out.trace = trace
  return out
}

function callerKey(fromMeta: string | undefined, idempotencyKey: unknown): string | undefined {
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || idempotencyKey === '')) throw new InputError('idempotencyKey must be a non-empty string')
  const sep = idempotencyKey as string | undefined
  if (fromMeta !== undefined && sep !== undefined && fromMeta !== sep) {
    throw new InputError(`_meta["${KEY_META}"] ${JSON.stringify(fromMeta)} and idempotencyKey ${JSON.stringify(sep)} name two different keys; give one`)
  }
  const key = fromMeta ?? sep
  if (key !== undefined && REPEAT_KEY.test(key)) throw new InputError(`caller key ${JSON.stringify(key)} has the form the proxy gives repeats of a call (repeat-<n>); choose another`)
  if (key !== undefined && key.length > 200) throw new InputError('a caller key must be at most 200 characters')
  return key
}

/** A journaled call's result, marked with its effect and state. */
export function marked(result: JsonObject, effectId: string, state: string, replayed: boolean): JsonObject {
  const meta: JsonObject = { ...((result._meta as JsonObject | undefined) ?? {}), 'interlock/effect': effectId, [STATE_META]: state }
  if (replayed) meta[REPLAYED_META] = true
  return { ...result, _meta: meta }
}
