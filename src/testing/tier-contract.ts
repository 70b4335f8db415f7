/**
 * The tier contract, in this process, against the service's own record:
 * - the target its table makes: its name, a tier of 1, 2 or 3, apply and
 *   validatePremises, a query at tier 2, the call's arguments accepted;
 * - what its tier promises: tier 1, applied twice under one effect id (as
 *   recovery re-applies), the service makes it once; tier 2, query answers
 *   null before apply and a receipt after, and for this effect only; tier 3,
 *   applied once, made once;
 * - premises: unchanged, validatePremises finds nothing; once `changeWorld`
 *   changed what the effect rests on, it names a violation.
 */
import assert from 'node:assert/strict'
import { toEffect, type Effect } from '../core/effect.js'
import type { ContractCase } from './case.js'
import { untilAnswered } from './not-now.js'
import { DEFAULT_TIMEOUT_MS, type TargetUnderTest } from './options.js'
import { distinct, withWorld, type World } from './world.js'

/** Time kept back from the runner's limit, so a slow case ends with the kit's message rather than the runner's. */
const MARGIN_MS = 1000

export function tierContract<S = undefined>(options: TargetUnderTest<S>): ContractCase[] {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const named = (what: string, check: (world: World<S>, deadline: number) => Promise<void>): ContractCase => ({
    name: `${options.name}: ${what}`,
    timeoutMs,
    run: () => withWorld(options, (world) => check(world, Date.now() + timeoutMs - MARGIN_MS)),
  })
  const cases = [
    named('the target its table makes', (world) => shape(options.name, world)),
    named('what its tier promises, by the service\'s own record', promise),
    named('premises hold while the world is unchanged', unchanged),
  ]
  const change = options.changeWorld
  if (change) cases.push(named('premises are violated once the world changed', (world) => changed(world, change)))
  return cases
}

async function shape<S>(name: string, world: World<S>): Promise<void> {
  const target = world.target()
  assert.equal(target.name, name, `the target made from [targets.${name}] is named ${JSON.stringify(target.name)}: a target must carry the name it is declared under`)
  assert.ok([1, 2, 3].includes(target.tier), `target ${name}: tier must be 1, 2 or 3, got ${JSON.stringify(target.tier)}`)
  assert.equal(typeof target.apply, 'function', `target ${name}: apply(effect, ctx) must be a function`)
  assert.equal(typeof target.validatePremises, 'function', `target ${name}: validatePremises(effect) must be a function`)
  const input = await world.input('shape')
  const tier = world.tierOf(input.action)
  if (tier === 2) assert.equal(typeof target.query, 'function', `target ${name}: action ${input.action} is tier 2, so query(effect) must be a function`)
  const effect = toEffect(input)
  target.validateArgs?.(effect.action, effect.args)
}

async function promise<S>(world: World<S>, deadline: number): Promise<void> {
  const [effect, other] = distinct(await world.input('a'), await world.input('b'))
  const tier = world.tierOf(effect.action)
  const target = world.target()
  const at = Date.now()
  if (tier === 2) {
    const before = await untilAnswered(deadline, () => target.query!(effect))
    assert.equal(before, null, `tier 2: query() found effect ${short(effect)} before it was applied (it answered ${JSON.stringify(before)}): recovery would take an effect that never happened for done`)
  }
  await untilAnswered(deadline, () => target.apply(effect, { attempt: 1, recovering: false, dispatchedAt: at, quietSince: at }))
  const once = await world.applications(effect)
  assert.equal(once, 1, `apply() returned for effect ${short(effect)}, yet applications() counts ${once}: apply must make the effect once, carrying its id, and applications() must count what the service made for that id`)

  if (tier === 1) {
    // Recovery's re-apply, from another process: a target of its own, the same effect id.
    const again = world.target()
    await untilAnswered(deadline, () => again.apply(effect, { attempt: 2, recovering: true, dispatchedAt: at, quietSince: at }))
    const twice = await world.applications(effect)
    assert.equal(twice, 1, `tier 1: effect ${short(effect)} applied again under the same effect id, as recovery re-applies it, and the service made it ${twice} times: a tier-1 target must carry the effect id to the service (an idempotency key the service honours) so that it makes the effect once; without one, declare tier 2 with a query, or tier 3`)
  }
  if (tier === 2) {
    const asker = world.target()
    const found = await untilAnswered(deadline, () => asker.query!(effect, { dispatchedAt: at, quietSince: at }))
    assert.ok(found !== null && typeof found === 'object', `tier 2: query() answered ${JSON.stringify(found)} for effect ${short(effect)}, which apply() had just made: after a crash, recovery would apply it again. A tier-2 query must find every effect its apply made, by the effect id apply carried`)
    const stranger = await untilAnswered(deadline, () => asker.query!(other))
    assert.equal(stranger, null, `tier 2: query() found effect ${short(other)}, which was never applied (it answered ${JSON.stringify(stranger)}): recovery would take it for done. A tier-2 query must find this effect only, by its effect id`)
  }
}

async function unchanged<S>(world: World<S>): Promise<void> {
  const effect = toEffect(await world.input('premises'))
  const violations = await world.target().validatePremises(effect)
  assert.deepEqual(violations, [], `validatePremises() named violations for effect ${short(effect)} though nothing changed since its premises were captured: the gate would reject every effect`)
}

async function changed<S>(world: World<S>, change: NonNullable<TargetUnderTest<S>['changeWorld']>): Promise<void> {
  const target = world.target()
  const effect = toEffect(await world.input('premises-changed'))
  await change(effect, world.service)
  const violations = await target.validatePremises(effect)
  const none = Object.keys(effect.premises).length === 0 ? ' (the effect has no premises: the target has no capture() and the call carries none)' : ''
  assert.ok(Array.isArray(violations) && violations.length > 0, `validatePremises() found nothing wrong with effect ${short(effect)} after changeWorld() changed what it rests on${none}: the gate would send an effect decided on a world that is gone`)
}

function short(effect: Effect): string {
  return effect.id.slice(0, 12)
}
