/**
 * Interlock's spans, through `@opentelemetry/api` only: the application
 * chooses the SDK and exporters; with none installed the API's tracer is a
 * no-op and these calls cost next to nothing (bench/gate measures it).
 *
 * What a span may carry is fixed here: the effect's id, thread, target,
 * action, tier, principal, the state reached, the attempt, the rule that
 * held it. Never args, premises, receipts or error messages (they may hold
 * what the agent sent or a secret): a failure is recorded by its error code.
 *
 * One trace per effect across processes: the context of the submit span is
 * journaled with the effect (`effect.trace`, W3C traceparent), and whoever
 * works on the effect later (a relay, recovery, reconcile-effects) makes its
 * span a child of that context, so the agent's call, the hold, the release
 * and the send are one trace however far apart in time and process.
 */
import { context, createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Span, type SpanOptions } from '@opentelemetry/api'
import type { Effect, Tier } from '../effect.js'
import type { TraceContext } from '../trace-context.js'
import { packageVersion } from '../package-version.js'

const TRACER = 'agent-interlock'

/** Off only for bench/gate's baseline (the tracing code absent): never in production. */
let enabled = true
export function setTracingEnabled(on: boolean): void {
  enabled = on
}

export { SpanKind }

export function effectAttributes(effect: Effect, tier?: Tier): Attributes {
  const a: Attributes = {
    'interlock.effect_id': effect.id,
    'interlock.thread': effect.thread,
    'interlock.target': effect.target,
    'interlock.action': effect.action,
  }
  if (tier !== undefined) a['interlock.tier'] = tier
  if (effect.principal !== undefined) a['interlock.principal'] = effect.principal
  return a
}

/**
 * Runs `fn` in a span named `name`, a child of `parent` (default: the active
 * context), made the active span for what `fn` calls. Ends it when `fn`
 * settles; an error sets the status to ERROR with its code, never its message.
 */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span | undefined) => Promise<T>, options: SpanOptions & { parent?: Context } = {}): Promise<T> {
  if (!enabled) return fn(undefined)
  const { parent = context.active(), ...spanOptions } = options
  const span = trace.getTracer(TRACER, packageVersion()).startSpan(name, { ...spanOptions, attributes }, parent)
  try {
    const result = await context.with(trace.setSpan(parent, span), () => fn(span))
    return result
  } catch (e) {
    span.setStatus({ code: SpanStatusCode.ERROR })
    span.setAttribute('error.type', errorType(e))
    throw e
  } finally {
    span.end()
  }
}

/** The context a journaled trace stands for (a remote parent), or undefined without one. */
export function contextOfTrace(t: TraceContext | undefined): Context | undefined {
  if (!t || !enabled) return undefined
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(t.traceparent)
  if (!m) return undefined
  const spanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true, ...(t.tracestate ? { traceState: createTraceState(t.tracestate) } : {}) }
  return trace.setSpanContext(ROOT_CONTEXT, spanContext)
}

/** The W3C trace context of `span` (to journal with an effect), when it has a valid one. */
export function traceOfSpan(span: Span | undefined, tracestate?: string): TraceContext | undefined {
  const c = span?.spanContext()
  if (!c || !trace.isSpanContextValid(c)) return undefined
  const traceparent = `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}`
  return tracestate ? { traceparent, tracestate } : { traceparent }
}

/**
 * The parent of a submit: the span active here when it belongs to the trace
 * the effect names (a proxy's own span for the call) or the effect names
 * none (a framework's span around the tool call); else the trace the effect
 * names (an MCP call's _meta); else none.
 */
export function submitParent(t: TraceContext | undefined): Context {
  const active = context.active()
  const span = trace.getSpanContext(active)
  if (span && trace.isSpanContextValid(span) && (!t || t.traceparent.slice(3, 35) === span.traceId)) return active
  return contextOfTrace(t) ?? active
}


function errorType(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code
  if (typeof code === 'string') return code
  return e instanceof Error ? e.name : 'Error'
}
