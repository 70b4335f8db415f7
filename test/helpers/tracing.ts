/**
 * OpenTelemetry's SDK in this test process: spans kept in memory, the
 * context carried through async calls (what an application's SDK set-up
 * does), and reading back what another process wrote through
 * test/fixtures/otel/register.mjs.
 */
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const REGISTER = fileURLToPath(new URL('../fixtures/otel/register.mjs', import.meta.url))

export function inMemoryTracing(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter()
  trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }))
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  return exporter
}

export interface SpanLine {
  name: string
  traceId: string
  spanId: string
  parentSpanId?: string
  links: string[]
  attributes: Record<string, unknown>
  events: unknown[]
  service?: string
}

export function spansIn(file: string): SpanLine[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as SpanLine)
}

export function parentOf(s: ReadableSpan): string | undefined {
  return (s as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId
}

/** Every attribute value and event of these spans, as one string: what must not hold a secret or an argument. */
export function exported(spans: readonly (ReadableSpan | SpanLine)[]): string {
  return JSON.stringify(spans.map((s) => ({ attributes: s.attributes, events: s.events, name: s.name })))
}
