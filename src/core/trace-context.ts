/**
 * W3C Trace Context (www.w3.org/TR/trace-context/) as an effect carries it:
 * the `traceparent` (and `tracestate`) of the request that asked for it, so
 * the call it becomes joins the caller's trace (an MCP call's `_meta`, and
 * the upstream call the proxy or a relay makes), and the journal says which
 * trace asked. Journaled with the effect, never part of its identity: a
 * retry from another span is the same effect.
 */
import { InputError } from './errors.js'

export interface TraceContext {
  traceparent: string
  tracestate?: string
}

// version 00 (the only one defined): 2-32-16-2 lowercase hex; a trace id or parent id of all zeros is invalid.
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/
/** tracestate: at most 32 list members, 512 characters is what the spec asks vendors to propagate at least. */
const TRACESTATE_MAX = 512

/** The trace context in `meta` (e.g. an MCP request's `_meta`), or undefined when it has none or a malformed one (the spec: ignore it). */
export function traceContextOf(meta: Record<string, unknown> | undefined): TraceContext | undefined {
  const parent = meta?.traceparent
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent)) return undefined
  const state = meta?.tracestate
  return typeof state === 'string' && state.length > 0 && state.length <= TRACESTATE_MAX && !/[\0-\x1f]/.test(state) ? { traceparent: parent, tracestate: state } : { traceparent: parent }
}

/** A submitted effect's `trace`, checked at the edge. */
export function checkTraceContext(v: unknown): TraceContext {
  const t = v as Partial<TraceContext> | null
  const ok =
    t !== null &&
    typeof t === 'object' &&
    !Array.isArray(t) &&
    Object.keys(t).every((k) => k === 'traceparent' || k === 'tracestate') &&
    traceContextOf(t as Record<string, unknown>) !== undefined &&
    (t.tracestate === undefined || traceContextOf(t as Record<string, unknown>)?.tracestate === t.tracestate)
  if (!ok) throw new InputError('effect.trace must be { traceparent, tracestate? } as W3C Trace Context writes them (traceparent "00-<32 hex>-<16 hex>-<2 hex>")')
  return t as TraceContext
}
