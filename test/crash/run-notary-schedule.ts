/**
 * Runs one notarized schedule (notary-schedule.ts) in-process and judges it:
 *
 * 1. the agent (a Gate in a Life, crash-model.ts; its notary client dies with
 *    it) submits the effects through notarized(the /plain route, tier 3); the
 *    service dies in its handler where the schedule says; the notary goes down
 *    after its k-th record and comes back mid-run or before recovery, or only
 *    after it; the adversary sends its forged and replayed records;
 * 2. a fresh agent recovers and one reconcile pass runs (with the notary down
 *    when it comes back only after recovery: then it is restarted and both
 *    run again, as the next cron would);
 * 3. every attempt the notary knows is sent to the service once more, late,
 *    and the adversary tries again;
 * 4. the invariants, against the service's own count of applications.
 *
 * The invariants:
 * [1] no effect applied twice;
 * [2] COMMITTED ⇒ applied exactly once; FAILED, REJECTED or never journaled ⇒ not applied;
 * [3] AMBIGUOUS only with a stated cause: the service died in its handler after
 *     claiming (the attempt CLAIMED without outcome; still so after recovery
 *     waited for it, when its abort lost to the claim), the notary did not answer
 *     the agent, or the agent was handed an answer that does not verify. An
 *     agent crash alone never leaves AMBIGUOUS while the notary answers;
 * [4] every effect ends in a stated safe state: COMMITTED, FAILED, REJECTED,
 *     AMBIGUOUS (with its cause) or never journaled; nothing in flight;
 * [5] the notary agrees with the service: at most one attempt claimed (none
 *     performed twice), COMMITTED ⇒ an attempt PERFORMED; each chain verifies;
 * [6] every forged, untrusted or replayed record is refused, never stored;
 * [7] a late request changes nothing: an aborted attempt is answered 409;
 * [8] a stale premise is never applied.
 */
import { toEffect, type EffectInput } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { IN_FLIGHT_STATES } from '../../src/core/lifecycle.js'
import type { JsonObject } from '../../src/core/canonical-json.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { notaryClient, NotaryUnreachable, type NotaryClient } from '../../src/core/notary/client.js'
import { ATTEMPT_HEADER, EFFECT_HEADER } from '../../src/core/notary/headers.js'
import type { EffectView } from '../../src/core/notary/log.js'
import { notarized } from '../../src/core/notary/notarized.js'
import { signRecord } from '../../src/core/notary/records.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { crashableStore, crashableTarget, CrashSignal, Life } from './crash-model.js'
import { AGENT, TRUSTED, type NotaryRig } from './notary-rig.js'
import type { Adversary, NotarySchedule } from './notary-schedule.js'
import { RETRY, yieldTurn as sleep } from './scene.js'

export interface NotaryScheduleResult {
  seed: number
  violations: string[]
  crash?: string
  /** Each effect's end state, with its cause when AMBIGUOUS. */
  ends: string[]
}

const MALLORY = generateKeyPair('relay', 'svc')

/** The agent's notary client inside its Life; notes every effect it could not get an answer about. */
function agentClient(inner: NotaryClient, life: Life, unreachable: Set<string>, tamper: boolean): NotaryClient {
  const guard = async <T>(effect: string, call: () => Promise<T>): Promise<T> => {
    life.check('notary')
    let answer: T
    try {
      answer = await call()
    } catch (err) {
      if (err instanceof NotaryUnreachable) unreachable.add(effect)
      throw err
    }
    life.check('notary answer')
    return answer
  }
  return {
    url: inner.url,
    effect: (effect) => guard(effect, async () => (tamper ? tampered(await inner.effect(effect)) : inner.effect(effect))),
    attempt: (effect, n) => guard(effect, () => inner.attempt(effect, n)),
    write: async (effect, attempt, kind, body, head) => {
      const answer = await guard(effect, () => inner.write(effect, attempt, kind, body, head))
      // Writing intend or abort is a durable boundary of the agent.
      if (answer.status === 'written' && (kind === 'intend' || kind === 'abort')) {
        life.pass(`after-${kind}`, effect)
        if (life.dead) throw new CrashSignal(`after-${kind}`)
      }
      return answer
    },
  }
}

/** A notary (or a path to it) that alters what the service said it performed. */
function tampered(view: EffectView): EffectView {
  const copy = structuredClone(view)
  for (const a of copy.attempts) for (const r of a.records) if (r.kind === 'performed') r.body = { ...r.body, status: 299 }
  return copy
}

/** @param withoutNotary the negative control: the same tier-3 target reached directly, not notarized */
export async function runNotarySchedule(rig: NotaryRig, s: NotarySchedule, withoutNotary = false): Promise<NotaryScheduleResult> {
  const { service, notary } = rig
  const url = service.url
  const unreachable = new Set<string>()
  const violations: string[] = []
  const plainTargets: HttpTarget[] = []
  const httpTarget = (n: number, timeoutMs: number) => {
    const t = new HttpTarget(`svc${n}`, { tier: 3, url: `${url}/plain/e${n}`, timeoutMs, connectTimeoutMs: 1000, premiseUrl: `${url}/resources/{args.doc}` })
    plainTargets.push(t)
    return t
  }
  const client = () => notaryClient({ url: notary.url, writer: 'agent-1', key: AGENT, timeoutMs: 2000 })
  const agentTargets = (life: Life, tamper = false): EffectTarget[] =>
    s.effects.map((e) =>
      withoutNotary
        ? httpTarget(e.n, 2000)
        : // claimWaitMs as config gives it: the target's timeout_ms (config-target.ts).
          notarized(httpTarget(e.n, 2000), { notary: agentClient(client(), life, unreachable, tamper), services: TRUSTED.services, claimWaitMs: 2000 }),
    )

  // The effects, their premises captured (unhurried), stale ones changed right after.
  const raw = s.effects.map((plan) => ({ plan, input: { thread: `n${s.seed}`, target: `svc${plan.n}`, action: 'charge', args: { doc: `n${s.seed}e${plan.n}`, amount: plan.n + 1 } } as EffectInput }))
  for (const e of raw) service.setResource(String(e.input.args.doc), { version: 1 })
  const probe = new Gate({ store: rig.store, targets: s.effects.map((e) => httpTarget(e.n, 10_000)) })
  const premises = await Promise.all(raw.map((e) => probe.capture(e.input.target, e.input.action, e.input.args)))
  for (const e of raw) if (e.plan.stale) service.setResource(String(e.input.args.doc), { version: 2 })
  const effects = raw.map((e, k) => ({ ...e, input: { ...e.input, premises: premises[k]! }, id: toEffect({ ...e.input, premises: premises[k]! }).id }))
  for (const e of effects) {
    if (e.plan.serviceDies !== 'none') service.setFault({ kind: 'drop', afterApply: e.plan.serviceDies === 'after-change' }, { path: `/plain/e${e.plan.n}`, times: 1 })
  }

  // 1. The agent, which may die; the notary, which may go down.
  notary.downAfterWrites(s.notaryDown?.afterWrites, s.notaryDown?.restart === 'mid-run')
  const life = new Life(s.crashAt)
  const first = new Gate({ store: crashableStore(rig.store, life), targets: agentTargets(life).map((t) => crashableTarget(t, life)), retry: RETRY, sleep })
  const submits = effects.flatMap((e) => Array.from({ length: e.plan.submits }, () => () => first.submit(e.input)))
  if (s.concurrent) await Promise.allSettled(submits.map((f) => f()))
  else for (const f of submits) await f().catch(() => {})
  await notary.settled()
  const refusedWrongly: string[] = []
  if (notary.up) await adversary(rig, s.adversary, effects.map((e) => e.id), refusedWrongly)

  // 2. Restart and recover: the service's handler faults are over; the notary is back unless it returns only after recovery.
  service.clearFaults()
  const recoverOnce = async () => {
    // An effect given back to AUTHORIZED (every try answered "not sent": the notary was down) waits for
    // its not-before time, which a loaded machine may not have reached yet: the next pass sends it.
    for (let pass = 0; pass < 4; pass++) {
      const targets = agentTargets(new Life(undefined), s.tampered)
      await new Gate({ store: rig.store, targets, retry: RETRY, sleep }).recover()
      await reconcileEffects({ store: rig.store, targets, storeConfig: rig.config, retry: RETRY, sleep, olderThanMs: 0, concurrency: 2 })
      const waiting = await Promise.all(effects.map(async (e) => (await rig.store.get(e.id))?.state === 'AUTHORIZED'))
      if (!waiting.includes(true)) return
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  if (s.notaryDown?.restart !== 'after-recovery') await notary.restart()
  await recoverOnce()
  if (!notary.up) {
    await lateRequests(rig, effects, violations, false)
    await notary.restart()
    await recoverOnce()
  }

  // 3. Late requests and the adversary again.
  await lateRequests(rig, effects, violations, true)
  await adversary(rig, s.adversary, effects.map((e) => e.id), refusedWrongly)
  violations.push(...refusedWrongly)

  // 4. Judge.
  const log = notary.log()
  const ends: string[] = []
  for (const e of effects) {
    const say = (what: string) => violations.push(`${e.id.slice(0, 12)}: ${what}`)
    const n = service.counts().plain[e.id] ?? 0
    const state = (await rig.store.get(e.id))?.state
    const view = await log.effect(e.id)
    const claimed = view.attempts.filter((a) => a.state === 'CLAIMED' || a.state === 'PERFORMED' || a.state === 'FAILED')
    const diedInHandler = view.attempts.some((a) => a.state === 'CLAIMED')
    if (n > 1) say(`[1] applied ${n} times (${state})`)
    if (state === 'COMMITTED' && n !== 1) say(`[2] COMMITTED but applied ${n} times`)
    if ((state === 'FAILED' || state === 'REJECTED' || !state) && n !== 0) say(`[2] ${state ?? 'never journaled'} but applied ${n} times`)
    let end = state ?? 'never journaled'
    if (state === 'AMBIGUOUS') {
      const cause =
        diedInHandler && e.plan.serviceDies !== 'none' ? 'service died in its handler'
        : diedInHandler && s.notaryDown ? 'notary down between claim and performed'
        : unreachable.has(e.id) ? 'notary unreachable'
        : s.tampered ? 'answer does not verify'
        : undefined
      if (!cause) say('[3] AMBIGUOUS though the notary answered, the service did not die in its handler and no answer was altered')
      end = `AMBIGUOUS (${cause ?? 'no cause'})`
    }
    if (state && IN_FLIGHT_STATES.includes(state)) say(`[4] still ${state} after recovery and a reconcile pass`)
    if (claimed.length > 1) say(`[5] ${claimed.length} attempts claimed at the notary`)
    // The service answers even when its performed could not be written (the notary went down): CLAIMED then.
    const settled = view.attempts.some((a) => a.state === 'PERFORMED' || (a.state === 'CLAIMED' && s.notaryDown))
    if (state === 'COMMITTED' && !settled) say(`[5] COMMITTED but the notary has no attempt PERFORMED (${view.attempts.map((a) => a.state).join(', ')})`)
    const problems = await log.verify(e.id)
    if (problems.length > 0) say(`[5] the notary's chain does not verify: ${problems.join('; ')}`)
    if (e.plan.stale && n > 0) say('[8] applied although its premise had changed before dispatch')
    ends.push(end)
  }
  for (const t of plainTargets) await t.close?.()
  const crash = life.crash && `${life.crash.point} of ${life.crash.effectId.slice(0, 12)} (boundary ${life.crash.boundary})`
  return { seed: s.seed, violations, crash, ends }
}

/** [7]: every attempt the notary knows, sent again as a late request; nothing may change. */
async function lateRequests(rig: NotaryRig, effects: { id: string; plan: { n: number }; input: EffectInput }[], violations: string[], notaryUp: boolean): Promise<void> {
  for (const e of effects) {
    const attempts = notaryUp ? (await rig.notary.log().effect(e.id)).attempts : [{ attempt: 1, state: 'UNKNOWN' as const }]
    for (const a of attempts) {
      const before = rig.service.counts().plain[e.id] ?? 0
      const res = await fetch(`${rig.service.url}/plain/e${e.plan.n}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [EFFECT_HEADER]: e.id, [ATTEMPT_HEADER]: String(a.attempt) },
        body: JSON.stringify({ action: e.input.action, args: e.input.args, effect_id: e.id }),
      })
      await res.text()
      const after = rig.service.counts().plain[e.id] ?? 0
      // An attempt still INTENDED was never claimed: the service may do it now, once (the effect can only be AMBIGUOUS or FAILED then).
      if (after !== before && !(a.state === 'INTENDED' && before === 0)) violations.push(`${e.id.slice(0, 12)}: [7] a late request for attempt ${a.attempt} (${a.state}) applied it again`)
      if (a.state === 'ABORTED' && res.status !== 409) violations.push(`${e.id.slice(0, 12)}: [7] a late request for aborted attempt ${a.attempt} was answered ${res.status}, not 409`)
      if (!notaryUp && res.status !== 503) violations.push(`${e.id.slice(0, 12)}: [7] with the notary down a late request was answered ${res.status}, not 503`)
    }
  }
}

/** [6]: records the notary must refuse, whatever the chain's state. */
async function adversary(rig: NotaryRig, kinds: Adversary[], ids: string[], wrong: string[]): Promise<void> {
  const log = rig.notary.log()
  for (const id of ids) {
    for (const kind of kinds) {
      const view = await log.effect(id)
      const attempt = view.attempts.at(-1)?.attempt ?? 1
      const at = new Date().toISOString()
      let record: unknown
      let expected: string
      if (kind === 'replay') {
        const last = view.attempts.flatMap((a) => a.records).sort((a, b) => a.seq - b.seq).at(-1)
        if (!last) continue
        const { seq: _seq, hash: _hash, ...signed } = last
        record = signed
        expected = 'stale'
      } else if (kind === 'forged-performed') {
        record = signRecord({ effect: id, attempt, kind: 'performed', writer: 'svc', at, body: { status: 200, body: { forged: true } as JsonObject }, prev: view.head }, MALLORY)
        expected = 'forged'
      } else if (kind === 'forged-abort') {
        record = signRecord({ effect: id, attempt, kind: 'abort', writer: 'agent-1', at, body: {}, prev: view.head }, MALLORY)
        expected = 'forged'
      } else {
        record = signRecord({ effect: id, attempt, kind: 'claim', writer: 'mallory', at, body: {}, prev: view.head }, MALLORY)
        expected = 'untrusted'
      }
      const res = await fetch(`${rig.notary.url}/v1/records`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(record) })
      const answer = (await res.json()) as { status: string }
      const after = await log.effect(id)
      if (answer.status !== expected) wrong.push(`${id.slice(0, 12)}: [6] the notary answered a ${kind} record '${answer.status}', not '${expected}'`)
      if (after.head !== view.head) wrong.push(`${id.slice(0, 12)}: [6] a ${kind} record changed the notary's chain`)
    }
  }
}
