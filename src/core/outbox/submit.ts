/**
 * `interlock outbox submit`: an operator's manual correction, a script or a
 * smoke test puts one effect into the outbox the way an agent does. It goes
 * through Outbox.submit, the agent's own path: journaled PROPOSED (durably,
 * args checked by the target, secrets refused) and nothing more. Whether it
 * is held or authorized is the relay's to decide, from its own policy
 * (docs/design.md, "The trust boundary"): the terminal gets no shortcut
 * past it.
 *
 * Only the named target is made (it gives the tier and checks the args), so
 * another target's unset credentials do not stop the submit.
 */
import type { Interlock } from '../interlock.js'
import type { EffectInput } from '../effect.js'
import { InterlockError, ExitCode, NotFoundError } from '../errors.js'
import type { State } from '../lifecycle.js'
import type { SubmitOutcome } from '../outcome.js'
import { createTarget } from '../targets/registry.js'
import { Outbox } from './outbox.js'

export interface SubmitResult {
  effectId: string
  thread: string
  target: string
  action: string
  /** Where the effect stood when it was journaled (or found journaled). */
  state: State
  /** False when the same effect was already in the outbox: nothing new was journaled. */
  created: boolean
  /** With a wait: what became of it. */
  outcome?: SubmitOutcome
}

export interface SubmitOptions {
  /** Wait this long for the effect to settle, become AMBIGUOUS or be HELD (a relay must be draining the outbox). */
  waitMs?: number
}

export async function submitEffect(interlock: Interlock, input: EffectInput, options: SubmitOptions = {}): Promise<SubmitResult> {
  const settings = interlock.config.targets[input.target]
  if (!settings) {
    const known = Object.keys(interlock.config.targets)
    throw new NotFoundError(`no target named ${JSON.stringify(input.target)} in ${interlock.config.file ?? 'the config'}`, {
      hint: known.length > 0 ? `Targets declared: ${known.join(', ')}.` : 'Declare it under [targets.<name>] in interlock.toml.',
      context: { target: input.target, known },
    })
  }
  const target = createTarget(input.target, settings, interlock.targetOptions())
  const outbox = new Outbox({ store: interlock.store, targets: [target] })
  try {
    const handle = await outbox.submit(input)
    const result: SubmitResult = { effectId: handle.effectId, thread: input.thread, target: input.target, action: input.action, state: handle.state, created: handle.created }
    if (options.waitMs !== undefined) result.outcome = await withDeadline(handle.result(), options.waitMs, handle.effectId)
    return result
  } finally {
    await outbox.close()
    await target.close?.()
  }
}

async function withDeadline<T>(work: Promise<T>, ms: number, effectId: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new InterlockError('E_WAIT_TIMEOUT', ExitCode.FAILURE, `effect ${effectId} was journaled but had not settled after ${ms} ms`, {
            hint: 'It stays in the outbox; a relay (`interlock relay`) dispatches it. Follow it with `interlock outbox show <id>`.',
            context: { effectId },
          }),
        ),
      ms,
    )
  })
  // Once the deadline wins, closing the outbox rejects the wait: nobody listens to it any more.
  work.catch(() => {})
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}
