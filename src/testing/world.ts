/**
 * One case's world: the service started, the table read against it, and the
 * targets and effects a case makes from them. Every target made here is
 * closed with the world, and the service stopped, passed or failed.
 */
import { randomBytes } from 'node:crypto'
import { toEffect, type Effect, type EffectInput, type Tier } from '../core/effect.js'
import type { InterlockConfig } from '../core/config/types.js'
import { InputError } from '../core/errors.js'
import { tierFor, type EffectTarget } from '../core/targets/target.js'
import { declaredConfig, declaredTarget, type Declaration } from './declared.js'
import type { TargetUnderTest } from './options.js'

export interface World<S> {
  readonly service: S
  readonly declaration: Declaration
  readonly config: InterlockConfig
  /** A new target, closed with the world. */
  target(): EffectTarget
  /** The call for `label`, in a thread of this case's own, with its premises captured when the call carries none. */
  input(label: string): Promise<EffectInput>
  /** The tier its effects of `action` are journaled with. */
  tierOf(action: string): Tier
  applications(effect: Effect): Promise<number>
  close(): Promise<void>
}

export async function openWorld<S>(options: TargetUnderTest<S>, extra: Pick<Declaration, 'store'> = {}): Promise<World<S>> {
  const service = (options.service ? await options.service.start() : undefined) as S
  const made: EffectTarget[] = []
  const close = async () => {
    for (const t of made.splice(0)) await t.close?.().catch(() => {})
    if (options.service?.stop) await options.service.stop(service)
  }
  try {
    const table = typeof options.table === 'function' ? options.table(service) : options.table
    const env = typeof options.env === 'function' ? options.env(service) : options.env
    const declaration: Declaration = {
      name: options.name,
      table,
      ...(env ? { env } : {}),
      dir: options.dir ?? process.cwd(),
      ...(options.gate ? { gate: options.gate } : {}),
      ...extra,
    }
    const config = declaredConfig(declaration)
    // Threads of a case's own: a sandbox account remembers the effects of earlier runs.
    const run = randomBytes(4).toString('hex')
    const target = () => {
      const t = declaredTarget(declaration, config)
      made.push(t)
      return t
    }
    const probe = target()
    return {
      service,
      declaration,
      config,
      target,
      async input(label) {
        const input = await options.call(`kit-${options.name}-${run}-${label}`, service)
        if (input?.target !== options.name) {
          throw new InputError(`call() made an effect for target ${JSON.stringify(input?.target)}; the kit tests target ${options.name}`, {
            hint: `Return { target: '${options.name}', ... } from call(), or name the table after the target it describes.`,
          })
        }
        if (input.premises !== undefined || !probe.capture) return input
        return { ...input, premises: await probe.capture(input.action, input.args) }
      },
      tierOf: (action) => tierFor(probe, action),
      applications: async (effect) => Number(await options.applications(effect, service)),
      close,
    }
  } catch (e) {
    await close()
    throw e
  }
}

/** Two effects of different threads: a call that ignores its thread would test one effect twice. */
export function distinct(a: EffectInput, b: EffectInput): [Effect, Effect] {
  const [ea, eb] = [toEffect(a), toEffect(b)]
  if (ea.id === eb.id) {
    throw new InputError(`call() made the same effect for two threads (${ea.id.slice(0, 12)}): the kit needs a different effect for each`, {
      hint: 'Build the effect with the thread call() is given ({ thread, target, action, args }).',
    })
  }
  return [ea, eb]
}

export async function withWorld<S>(options: TargetUnderTest<S>, fn: (world: World<S>) => Promise<void>, extra: Pick<Declaration, 'store'> = {}): Promise<void> {
  const world = await openWorld(options, extra)
  try {
    await fn(world)
  } finally {
    await world.close()
  }
}
