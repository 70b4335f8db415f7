/**
 * What a notarized service decides for a request, whatever serves it
 * (docs/notary.md, "What the service must do", the form around the handler).
 * The node:http / Express middleware (middleware.ts) and the Fastify plugin
 * (fastify.ts) are each a thin mapping of this onto their framework, so the
 * two answer every state of an attempt with the same status and body:
 *
 * - no Interlock-Effect / Interlock-Attempt headers: pass, the handler runs
 *   untouched; malformed ones: 400 `bad-notary-headers`;
 * - `claim` the attempt before the handler runs; refused because the agent
 *   aborted it: 409 `aborted`; already performed: the recorded answer again
 *   (`Interlock-Replayed: true`); already failed: its recorded refusal;
 *   claimed without an outcome (the service died in its handler): 503
 *   `claimed`; any other refusal: 503 `notary-refused`; no answer from the
 *   notary: 503 `notary-unreachable`. In each of these the handler never runs.
 * - after the handler: its 2xx answer is recorded as `performed`, its 4xx as
 *   `failed` (it changed nothing); a 5xx writes nothing (the outcome is not
 *   known: CLAIMED, AMBIGUOUS to the agent). The framework holds the answer
 *   back until `record` has settled.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { JsonObject, JsonValue } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { notaryClient, type NotaryClient } from './client.js'
import { ATTEMPT_HEADER, EFFECT_HEADER, REPLAYED_HEADER } from './headers.js'
import type { AttemptView } from './state.js'

export interface NotaryMiddlewareOptions {
  /** The notary's URL, or a client to it. */
  notary: string | NotaryClient
  /** The service's name as [notary] services trusts it. */
  service: string
  key: Pick<KeyPair, 'seed'>
  timeoutMs?: number
}

/** An answer the service sends instead of running its handler. */
export interface GateAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** What the request's headers say: no notary involved, a bad request, or an attempt to claim. */
export type Admission = { kind: 'pass' } | { kind: 'answer'; answer: GateAnswer } | { kind: 'claim'; effect: string; attempt: number }

/** After the claim: answer without running the handler, or run it and record its answer. */
export type ClaimOutcome = { kind: 'answer'; answer: GateAnswer } | { kind: 'run'; record: Recorder }

/** Records the handler's answer (status, raw body, content type) as performed, failed, or nothing. */
export type Recorder = (status: number, raw: string, contentType: string) => Promise<void>

export interface ServiceGate {
  admit(headers: IncomingHttpHeaders): Admission
  claim(effect: string, attempt: number): Promise<ClaimOutcome>
}

export function serviceGate(opts: NotaryMiddlewareOptions): ServiceGate {
  const client = typeof opts.notary === 'string' ? notaryClient({ url: opts.notary, writer: opts.service, key: opts.key, timeoutMs: opts.timeoutMs }) : opts.notary
  return {
    admit(headers) {
      const effect = one(headers[EFFECT_HEADER])
      const attemptText = one(headers[ATTEMPT_HEADER])
      if (effect === undefined && attemptText === undefined) return { kind: 'pass' }
      const attempt = Number(attemptText)
      if (!effect || !/^[0-9a-f]{64}$/.test(effect) || !Number.isInteger(attempt) || attempt < 1) {
        return { kind: 'answer', answer: json(400, { error: 'bad-notary-headers', message: `${EFFECT_HEADER} must be an effect id and ${ATTEMPT_HEADER} a positive integer` }) }
      }
      return { kind: 'claim', effect, attempt }
    },
    async claim(effect, attempt) {
      try {
        const claim = await client.write(effect, attempt, 'claim')
        if (claim.status === 'decided') return { kind: 'answer', answer: replay(claim.view!) }
        if (claim.status !== 'written') return { kind: 'answer', answer: json(503, { error: 'notary-refused', status: claim.status, message: claim.reason ?? claim.status }) }
      } catch (err) {
        return { kind: 'answer', answer: json(503, { error: 'notary-unreachable', message: err instanceof Error ? err.message : String(err) }) }
      }
      return {
        kind: 'run',
        record: async (status, raw, contentType) => {
          const body = bodyOf(raw, contentType)
          if (status >= 200 && status < 300) await client.write(effect, attempt, 'performed', { status, body, contentType })
          else if (status >= 400 && status < 500) await client.write(effect, attempt, 'failed', { status, body, contentType, reason: reasonOf(body, status) })
        },
      }
    },
  }
}

function replay(view: AttemptView): GateAnswer {
  if (view.state === 'ABORTED') return json(409, { error: 'aborted', message: `attempt ${view.attempt} of effect ${view.effect} was aborted by the agent` })
  const outcome = view.records.find((r) => r.kind === 'performed' || r.kind === 'failed')
  if (!outcome) return json(503, { error: 'claimed', message: `attempt ${view.attempt} was claimed and has no recorded outcome; it is not performed again` })
  const b = outcome.body as { status?: number; body?: JsonValue; contentType?: string }
  const contentType = b.contentType ?? 'application/json'
  return {
    status: b.status ?? 200,
    headers: { 'content-type': contentType, [REPLAYED_HEADER]: 'true' },
    body: typeof b.body === 'string' && !contentType.includes('json') ? b.body : JSON.stringify(b.body ?? null),
  }
}

function bodyOf(text: string, contentType: string): JsonValue {
  if (!contentType.includes('json')) return text
  try {
    return JSON.parse(text) as JsonValue
  } catch {
    return text
  }
}

function reasonOf(body: JsonValue, status: number): string {
  const m = (body as JsonObject | null)?.error
  const text = typeof m === 'string' ? m : typeof (m as JsonObject | null)?.message === 'string' ? String((m as JsonObject).message) : ''
  return text || `answered ${status}`
}

function json(status: number, body: unknown): GateAnswer {
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}
