/**
 * Another writer's change in the gap between a target's premise check and
 * its write: the check passes, `change` runs, then the gate sends. A premise
 * only checked beforehand misses it; one pushed down into the write itself
 * (If-Match, the head sha of a merge, FOR UPDATE) must still refuse.
 */
import type { EffectTarget } from '../../src/core/targets/target.js'

export function thenMeanwhile(target: Pick<EffectTarget, 'validatePremises'>, change: () => unknown): void {
  const check = target.validatePremises.bind(target)
  target.validatePremises = async (effect) => {
    const violations = await check(effect)
    await change()
    return violations
  }
}
