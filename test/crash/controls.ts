/**
 * Negative controls: each one breaks one of the gate's promises on purpose,
 * so the crash harness can show it catches the break (a harness that cannot
 * fail proves nothing). They live here, in test code only: the shipped
 * binary has no way to switch a guarantee off. Each is a decorator of the
 * Store or EffectTarget port, applied by whoever builds a "process" of the
 * harness (run-schedule.ts, run-relay-schedule.ts, the *-child.ts workers):
 *
 *   sendBeforeDurable  a store that applies the effect when asked to append
 *                      AUTHORIZED → DISPATCHED (for a new effect, in one
 *                      commit with its proposal), before making that append
 *                      (the gate then finds the receipt already there)
 *   newKeyOnRetry      an HTTP target that sends a fresh Idempotency-Key on
 *                      every retry and on recovery (tier 1)
 *   skipPremiseCheck   a target whose validatePremises always says "still holds"
 *   resendTier3        a store that reports a DISPATCHED tier-3 effect as
 *                      tier 1, so recovery re-sends it instead of marking it AMBIGUOUS
 *
 * Two hooks, because the breaks sit at two depths: `target` decorates the
 * service's own targets (inside the crash model's Life, crash-model.ts, so a
 * dead process still sends nothing), `process` decorates what one process
 * holds (its store handle and its targets, outside the Life).
 */
import { randomUUID } from 'node:crypto'
import { crashPoint } from '../../src/core/crash-points.js'
import type { EffectSnapshot, Receipt } from '../../src/core/effect.js'
import type { AppendRequest, AppendResult, JournalRecord, Store } from '../../src/core/stores/store.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import type { ApplyContext, EffectTarget } from '../../src/core/targets/target.js'

export const CONTROL_NAMES = ['sendBeforeDurable', 'newKeyOnRetry', 'skipPremiseCheck', 'resendTier3'] as const
export type ControlName = (typeof CONTROL_NAMES)[number]

/** What one process of the harness works with. */
export interface ProcessPorts {
  store: Store
  targets: EffectTarget[]
}

export interface NegativeControl {
  readonly name: ControlName
  /** Decorates one of the service's targets, before any process wraps it. */
  target(t: EffectTarget): EffectTarget
  /** Decorates one process's store and targets. */
  process(p: ProcessPorts): ProcessPorts
}

export function negativeControl(name: ControlName): NegativeControl {
  switch (name) {
    case 'sendBeforeDurable':
      return { name, target: (t) => t, process: sendBeforeDurable }
    case 'newKeyOnRetry':
      return { name, target: newKeyOnRetry, process: (p) => p }
    case 'skipPremiseCheck':
      return { name, target: skipPremiseCheck, process: (p) => p }
    case 'resendTier3':
      return { name, target: (t) => t, process: (p) => ({ store: resendTier3(p.store), targets: p.targets }) }
  }
}

/** Parses a control's name (a child's plan, a command line), refusing an unknown one. */
export function controlNamed(name: string): NegativeControl {
  if (!(CONTROL_NAMES as readonly string[]).includes(name)) throw new Error(`no negative control ${name}; there are ${CONTROL_NAMES.join(', ')}`)
  return negativeControl(name as ControlName)
}

/**
 * The store sends the effect as the DISPATCHED append is asked for, then
 * makes the append; the process's targets hand the gate the receipt of that
 * early send instead of sending again. An early send that returned passes
 * the `after-apply` crash point, so a child process can be killed between
 * the send and the DISPATCHED record.
 */
function sendBeforeDurable(p: ProcessPorts): ProcessPorts {
  const early = new Map<string, Receipt>()
  const byName = new Map(p.targets.map((t) => [t.name, t]))
  const store = decorate(p.store, {
    append: async (requests: AppendRequest[]) => {
      for (const r of requests) {
        if (r.from !== 'AUTHORIZED' || r.to !== 'DISPATCHED') continue
        // A new effect's DISPATCHED comes in one commit with its proposal: the effect is not in the store yet.
        const effect = requests.find((q) => q.effectId === r.effectId && q.effect)?.effect ?? (await p.store.get(r.effectId))?.effect
        const target = effect && byName.get(effect.target)
        if (!effect || !target) continue
        early.set(r.effectId, await target.apply(effect, { attempt: 1, recovering: false }))
        await crashPoint('after-apply', r.effectId)
      }
      return p.store.append(requests)
    },
  })
  const targets = p.targets.map((t) =>
    withApply(t, async (effect, ctx) => {
      const receipt = early.get(effect.id)
      if (!receipt) return t.apply(effect, ctx)
      early.delete(effect.id)
      return receipt
    }),
  )
  return { store, targets }
}

/**
 * A tier-1 HTTP target that forgets its key when it sends again: the
 * Idempotency-Key of a retry or a recovery's re-apply is new, so the
 * service applies it a second time. The HTTP target hands its ApplyContext
 * to `send` (for the fence); that is where the retry shows.
 */
function newKeyOnRetry(t: EffectTarget): EffectTarget {
  if (!(t instanceof HttpTarget) || t.tier !== 1) return t
  const send: HttpTarget['send'] = (method, url, headers, body, guard) => {
    const ctx = guard as Partial<ApplyContext> | undefined
    const again = ctx !== undefined && ((ctx.attempt ?? 1) > 1 || ctx.recovering === true)
    const key = headers['idempotency-key']
    return t.send(method, url, again && key ? { ...headers, 'idempotency-key': `${key}-retry-${randomUUID()}` } : headers, body, guard)
  }
  return new Proxy(t, {
    get: (target, prop, receiver) => (prop === 'send' ? send : Reflect.get(target, prop, receiver)),
  })
}

/** Premises are never re-checked: a changed world is not noticed. */
function skipPremiseCheck(t: EffectTarget): EffectTarget {
  const skipped = Object.create(t) as EffectTarget
  Object.defineProperty(skipped, 'validatePremises', { value: async () => [] })
  return skipped
}

/**
 * DISPATCHED tier-3 effects read back as tier 1, in their row and in their
 * PROPOSED record alike (a relay takes the tier from the journal and refuses
 * a row that disagrees with it): whoever recovers them re-sends.
 */
function resendTier3(store: Store): Store {
  const relabel = (s: EffectSnapshot): EffectSnapshot => (s.state === 'DISPATCHED' && s.tier === 3 ? { ...s, tier: 1 } : s)
  const relabelHistory = (h: JournalRecord[]): JournalRecord[] =>
    h.at(-1)?.state === 'DISPATCHED' && h[0]?.data.tier === 3 ? [{ ...h[0], data: { ...h[0].data, tier: 1 } }, ...h.slice(1)] : h
  return decorate(store, {
    history: async (id: string) => relabelHistory(await store.history(id)),
    get: async (id: string) => {
      const s = await store.get(id)
      return s && relabel(s)
    },
    list: async (...a: Parameters<Store['list']>) => (await store.list(...a)).map(relabel),
    scanInFlight: async () => {
      const scan = await store.scanInFlight()
      const histories = scan.histories && new Map([...scan.histories].map(([id, h]) => [id, relabelHistory(h)]))
      return { ...scan, effects: scan.effects.map(relabel), histories }
    },
    claim: async (...a: Parameters<Store['claim']>) => (await store.claim(...a)).map((c) => ({ ...c, snapshot: relabel(c.snapshot) })),
    append: async (requests: AppendRequest[]): Promise<AppendResult[]> =>
      (await store.append(requests)).map((r) => (r.ok || !r.current ? r : { ok: false, current: relabel(r.current) })),
  })
}

/** The store with some methods replaced; every other call goes to it unchanged. */
function decorate(store: Store, replaced: Partial<Record<keyof Store, unknown>>): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (Object.hasOwn(replaced, prop)) return replaced[prop as keyof Store]
      const value = Reflect.get(target, prop, receiver) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
}

function withApply(t: EffectTarget, apply: EffectTarget['apply']): EffectTarget {
  const wrapped = Object.create(t) as EffectTarget
  Object.defineProperty(wrapped, 'apply', { value: apply })
  return wrapped
}

/** One process's ports, under the control when there is one. */
export function processPorts(control: NegativeControl | undefined, store: Store, targets: EffectTarget[]): ProcessPorts {
  return control ? control.process({ store, targets }) : { store, targets }
}
