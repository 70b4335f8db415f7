/**
 * The targets the bench's gate and reconcile act through, in process: each
 * answers at once, so what is measured is the store and the engine, not a
 * service. payments is tier 1 (re-applied with its key), orders tier 2
 * (asked first: not found, then applied), mail tier 3 (marked AMBIGUOUS,
 * never re-sent).
 */
import type { Effect, Receipt, Tier } from '../../src/core/effect.js'
import { passFence } from '../../src/core/targets/fence.js'
import type { ApplyContext, EffectTarget } from '../../src/core/targets/target.js'

export class BenchTarget implements EffectTarget {
  applied = 0
  asked = 0
  query?: (effect: Effect) => Promise<Receipt | null>

  constructor(
    readonly name: string,
    readonly tier: Tier,
  ) {
    if (tier === 2) {
      this.query = async () => {
        this.asked++
        return null
      }
    }
  }

  async validatePremises(): Promise<string[]> {
    return []
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    passFence(ctx.fence, `target ${this.name}`)
    this.applied++
    return { id: `r_${effect.id.slice(0, 16)}` }
  }
}

export function benchTargets(): BenchTarget[] {
  return [new BenchTarget('payments', 1), new BenchTarget('orders', 2), new BenchTarget('mail', 3)]
}
