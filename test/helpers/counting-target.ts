/**
 * An in-process target for gate tests. It keeps its own ledger of what was
 * applied per effect id — the ground truth the tests check — and can be told
 * to fail in each way a real service fails.
 */
import type { Effect, Receipt, Tier } from '../../src/core/effect.js'
import { DispatchFault, type DispatchFaultKind } from '../../src/core/errors.js'
import { passFence } from '../../src/core/targets/fence.js'
import type { ApplyContext, EffectTarget } from '../../src/core/targets/target.js'

export type Fault =
  | { kind: DispatchFaultKind; afterApplying?: boolean; retryAfterMs?: number }
  | { kind: 'throw'; afterApplying?: boolean }

export class CountingTarget implements EffectTarget {
  /** Times the world was changed, per effect id (idempotent tier-1 replays don't count). */
  readonly applied = new Map<string, number>()
  /** Every call of apply, per effect id. */
  readonly calls = new Map<string, number>()
  readonly queries: string[] = []
  /** Faults to inject, one per call of apply, in order. */
  faults: Fault[] = []
  /** Premise violations to report. */
  violations: string[] = []
  /** Called at the start of apply, e.g. to check the journal state. */
  onApply?: (effect: Effect) => void | Promise<void>
  validateArgs?: (action: string, args: Effect['args']) => void
  query?: (effect: Effect) => Promise<Receipt | null>
  /** A tier per action, as an MCP server's tools have (default: the target's tier for every action). */
  tierOf?: (action: string) => Tier

  constructor(
    readonly name: string,
    readonly tier: Tier,
  ) {
    if (tier === 2) {
      this.query = async (effect) => {
        this.queries.push(effect.id)
        return this.applied.has(effect.id) ? { found: effect.id } : null
      }
    }
  }

  async validatePremises(): Promise<string[]> {
    return this.violations
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    this.calls.set(effect.id, (this.calls.get(effect.id) ?? 0) + 1)
    await this.onApply?.(effect)
    const fault = this.faults.shift()
    if (fault && !fault.afterApplying) throw toError(fault)
    // As a real target does: the last thing before the write is the relay's fence.
    passFence(ctx.fence, `target ${this.name}`)
    this.land(effect.id)
    if (fault && fault.afterApplying) throw toError(fault)
    return { applied: effect.id }
  }

  private land(id: string): void {
    // Tier 1 services dedupe on the idempotency key; the others apply every time they are asked.
    if (this.tier === 1 && this.applied.has(id)) return
    this.applied.set(id, (this.applied.get(id) ?? 0) + 1)
  }

  count(id: string): number {
    return this.applied.get(id) ?? 0
  }
}

function toError(f: Fault): Error {
  if (f.kind === 'throw') return new Error('socket hang up')
  return new DispatchFault(f.kind, `injected ${f.kind}`, { retryAfterMs: 'retryAfterMs' in f ? f.retryAfterMs : undefined })
}
