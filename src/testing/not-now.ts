/**
 * A target may answer "not now" (a DispatchFault of kind retry-later: a rate
 * limit, or a lagging search whose "not found" is not to be believed yet).
 * Nothing was done, so the kit asks again when it was told to, as the gate
 * would, until the case's deadline.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { DispatchFault } from '../core/errors.js'

export async function untilAnswered<T>(deadline: number, ask: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await ask()
    } catch (e) {
      if (!(e instanceof DispatchFault) || e.kind !== 'retry-later') throw e
      const wait = Math.max(10, e.retryAfterMs ?? 100)
      if (Date.now() + wait > deadline) throw e
      await sleep(wait)
    }
  }
}
