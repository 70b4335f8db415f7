/**
 * The agent side of the notary: `notarized(target)` lifts a tier-3 target to
 * tier 2 (docs/notary.md, "Recovery"). The gate needs no other change: a
 * tier-2 target is one that can be asked whether the effect happened, and
 * the notary is what is asked.
 *
 * apply: reads the effect at the notary and sends the attempt it stands at
 * (1, or the one after an aborted one), writing `intend` first and sending
 * Interlock-Effect and Interlock-Attempt with the request; an attempt already
 * performed or failed is answered from the notary without sending.
 *
 * query (recovery, or an unknown outcome in flight), by the latest attempt:
 * | the notary has       | answer                                          |
 * |----------------------|-------------------------------------------------|
 * | PERFORMED            | the receipt (→ COMMITTED)                       |
 * | FAILED               | not found; apply then answers the recorded refusal (→ FAILED), sending nothing |
 * | CLAIMED              | cannot know (→ AMBIGUOUS)                       |
 * | none, INTENDED       | abort it; won → not found (apply sends n + 1); lost → as the winner says |
 * | (abort lost to a claim) | wait for the outcome (claimWaitMs): PERFORMED, FAILED as above; still CLAIMED → AMBIGUOUS |
 * | ABORTED              | not found (apply sends n + 1)                   |
 * | unreachable, or a service record that does not verify | cannot know (→ AMBIGUOUS): never guess |
 */
import type { JsonObject } from '../canonical-json.js'
import { crashPoint } from '../crash-points.js'
import type { Effect, Receipt } from '../effect.js'
import { DispatchFault } from '../errors.js'
import type { ApplyContext, EffectTarget } from '../targets/target.js'
import { NotaryUnreachable, type NotaryClient } from './client.js'
import { ATTEMPT_HEADER, EFFECT_HEADER } from './headers.js'
import type { EffectView } from './log.js'
import { verifyRecord, WRITER_ROLE } from './records.js'
import type { AttemptView } from './state.js'

export interface NotarizedOptions {
  /** A client to the notary, writing as this agent (its relay key). */
  notary: NotaryClient
  /** Service names → public keys: the notary's answers about the service are believed only when they verify. */
  services: Readonly<Record<string, string>>
  /**
   * The notary's URL as the journal records it in each DISPATCHED record
   * (dispatched-through.ts); default the client's URL. A URL read from a
   * `${VAR}` is journaled scrubbed, and compared so.
   */
  journaledAs?: string
  /**
   * How long recovery waits for the outcome of an attempt whose abort lost to
   * the service's claim (a late request: the service is performing it right
   * now), polling the notary with back-off; default 10000 ms, the http
   * target's default timeout_ms (config-target.ts passes the target's own).
   * Still CLAIMED at the end: AMBIGUOUS (docs/notary.md, "A late request").
   */
  claimWaitMs?: number
  /** Injected for tests; default Date.now and setTimeout. */
  now?: () => number
  sleep?: (ms: number) => Promise<void>
}

/** The default claimWaitMs: the http target's default timeout_ms. */
export const CLAIM_WAIT_MS = 10_000
/** The first poll after the abort lost comes this soon; each next one twice as late, up to POLL_MAX_MS. */
const POLL_FIRST_MS = 20
const POLL_MAX_MS = 500

export function notarized(inner: EffectTarget, opts: NotarizedOptions): EffectTarget {
  const { notary, services } = opts
  const claimWaitMs = opts.claimWaitMs ?? CLAIM_WAIT_MS
  const now = opts.now ?? Date.now
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const read = async (effect: Effect, fault: 'not-sent' | 'unknowable'): Promise<EffectView> => {
    try {
      return await notary.effect(effect.id)
    } catch (err) {
      throw new DispatchFault(fault, `target ${inner.name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    }
  }
  const untrustworthy = (view: AttemptView): string | undefined => {
    for (const r of view.records) {
      if (WRITER_ROLE[r.kind] !== 'service') continue
      const key = Object.hasOwn(services, r.writer) ? services[r.writer] : undefined
      if (!key || !verifyRecord(r, key)) return `the notary's ${r.kind} of attempt ${view.attempt} is not signed by a trusted service (${r.writer})`
    }
    return undefined
  }
  const receiptOf = (view: AttemptView): Receipt => {
    const performed = view.records.find((r) => r.kind === 'performed')!
    const b = performed.body as { status?: number; body?: JsonObject }
    return { status: b.status ?? 200, body: b.body ?? null, notary: { attempt: view.attempt, record: performed as unknown as JsonObject } }
  }
  const reasonOf = (view: AttemptView) => {
    const failed = view.records.find((r) => r.kind === 'failed')
    return `the service refused attempt ${view.attempt}: ${String((failed?.body as { reason?: unknown } | undefined)?.reason ?? 'no reason given')}`
  }

  /**
   * The abort of attempt `n` lost to the service's claim: a request for it
   * reached the service late (a crashed agent's, or a relay's that lost its
   * lease) and the service is performing it now, so its outcome usually
   * follows within milliseconds. Polls the notary's attempt until it is
   * PERFORMED (the receipt) or FAILED (null: apply answers the recorded
   * refusal, sending nothing), for at most claimWaitMs; still CLAIMED then,
   * or the notary silent meanwhile: AMBIGUOUS, never a guess. Polling, not a
   * long-poll: the in-transaction form writes `performed` straight into the
   * notary's tables, and an HA notary runs several servers over one
   * database, so no one server process sees every outcome arrive.
   */
  const awaitOutcome = async (effect: Effect, n: number): Promise<Receipt | null> => {
    const deadline = now() + claimWaitMs
    let pause = POLL_FIRST_MS
    for (;;) {
      const left = deadline - now()
      if (left <= 0) {
        throw new DispatchFault(
          'unknowable',
          `target ${inner.name}: the service claimed attempt ${n} and has not reported its outcome (waited ${claimWaitMs} ms at the notary after its claim won over this agent's abort): it may have died in its handler; not guessing`,
        )
      }
      await sleep(Math.min(pause, left))
      pause = Math.min(pause * 2, POLL_MAX_MS)
      let view: AttemptView
      try {
        view = await notary.attempt(effect.id, n)
      } catch (err) {
        throw new DispatchFault(
          'unknowable',
          `target ${inner.name}: the service claimed attempt ${n}, and the notary stopped answering while this agent waited for its outcome: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        )
      }
      const wrong = untrustworthy(view)
      if (wrong) throw new DispatchFault('unknowable', `target ${inner.name}: ${wrong}`)
      if (view.state === 'PERFORMED') return receiptOf(view)
      if (view.state === 'FAILED') return null
      if (view.state !== 'CLAIMED') throw new DispatchFault('unknowable', `target ${inner.name}: attempt ${n} went from CLAIMED to ${view.state} at the notary; not guessing`)
    }
  }

  const target: EffectTarget = {
    name: inner.name,
    tier: 2,
    notary: opts.journaledAs ?? notary.url,
    validatePremises: (effect) => inner.validatePremises(effect),
    // The service's own checks at submit and its premises (an http target's templates, rests_on) hold behind the notary too.
    ...(inner.validateArgs ? { validateArgs: (action: string, args: JsonObject) => inner.validateArgs!(action, args) } : {}),
    ...(inner.capture ? { capture: (action: string, args: JsonObject) => inner.capture!(action, args) } : {}),
    async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
      const view = await read(effect, 'not-sent')
      const last = view.attempts.at(-1)
      let attempt = 1
      let intend = true
      if (last) {
        const wrong = untrustworthy(last)
        if (wrong) throw new DispatchFault('unknowable', `target ${inner.name}: ${wrong}`)
        switch (last.state) {
          case 'PERFORMED':
            return receiptOf(last)
          case 'FAILED':
            throw new DispatchFault('refused', `target ${inner.name}: ${reasonOf(last)}`)
          case 'CLAIMED':
            throw new DispatchFault('unknowable', `target ${inner.name}: the service claimed attempt ${last.attempt} and recorded no outcome`)
          case 'ABORTED':
            attempt = last.attempt + 1
            break
          default:
            // INTENDED: sent perhaps, never claimed; the same attempt again is answered once by the service.
            attempt = last.attempt
            intend = false
        }
      }
      if (intend) {
        let answer
        try {
          answer = await notary.write(effect.id, attempt, 'intend', { target: inner.name, action: effect.action }, view.head)
        } catch (err) {
          throw new DispatchFault('not-sent', `target ${inner.name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
        }
        if (answer.status === 'untrusted' || answer.status === 'forged') {
          throw new DispatchFault('refused', `target ${inner.name}: the notary refused this agent's intend (${answer.reason ?? answer.status}); nothing was sent`)
        }
        if (answer.status !== 'written') throw new DispatchFault('not-sent', `target ${inner.name}: the notary did not take intend for attempt ${attempt} (${answer.status}); nothing was sent`)
        await crashPoint('after-intend', effect.id)
      }
      return inner.apply(effect, { ...ctx, headers: { ...ctx.headers, [EFFECT_HEADER]: effect.id, [ATTEMPT_HEADER]: String(attempt) } })
    },
    async query(effect: Effect): Promise<Receipt | null> {
      let view = await read(effect, 'unknowable')
      let abortLost = false
      for (let round = 0; round < 4; round++) {
        const last = view.attempts.at(-1)
        const wrong = last && untrustworthy(last)
        if (wrong) throw new DispatchFault('unknowable', `target ${inner.name}: ${wrong}`)
        const state = last?.state ?? 'NONE'
        if (state === 'PERFORMED') return receiptOf(last!)
        if (state === 'FAILED' || state === 'ABORTED') return null
        if (state === 'CLAIMED' && abortLost) return awaitOutcome(effect, last!.attempt)
        if (state === 'CLAIMED') {
          throw new DispatchFault('unknowable', `target ${inner.name}: the service claimed attempt ${last!.attempt} and the notary has no outcome for it: it started and may or may not have finished`)
        }
        const attempt = last?.attempt ?? 1
        let answer
        try {
          answer = await notary.write(effect.id, attempt, 'abort', {}, view.head)
        } catch (err) {
          const why = err instanceof NotaryUnreachable ? err.message : String(err)
          throw new DispatchFault('unknowable', `target ${inner.name}: could not abort attempt ${attempt}: ${why}`, { cause: err })
        }
        if (answer.status === 'written') return null
        // Lost (decided), or the chain moved on (stale): a claim may have won; read which.
        abortLost = true
        if (answer.status !== 'decided' && answer.status !== 'stale') {
          throw new DispatchFault('unknowable', `target ${inner.name}: the notary refused the abort of attempt ${attempt} (${answer.reason ?? answer.status})`)
        }
        view = await read(effect, 'unknowable')
      }
      throw new DispatchFault('unknowable', `target ${inner.name}: the notary's answer kept changing; not guessing`)
    },
  }
  if (inner.capture) target.capture = (action, args) => inner.capture!(action, args)
  if (inner.validateArgs) target.validateArgs = (action, args) => inner.validateArgs!(action, args)
  if (inner.probe) target.probe = (signal) => inner.probe!(signal)
  if (inner.close) target.close = () => inner.close!()
  if (inner.compensation) target.compensation = (e, r) => inner.compensation!(e, r)
  if (inner.notCompensable) Object.assign(target, { notCompensable: inner.notCompensable })
  return target
}
