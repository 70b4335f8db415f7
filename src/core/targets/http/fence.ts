/**
 * The last check before a request's first byte leaves the process (../fence.ts).
 *
 * A relay holds a lease on each effect it works on. It checks the lease before
 * it calls `apply`, but between that check and the moment the request is
 * written lie connection set-up, a pool queue and event-loop turns:
 * milliseconds. A relay stopped (SIGSTOP, a VM pause) inside that stretch and
 * resumed past its lease would send a request that the relay which took the
 * effect over already sent, after asking a tier-2 service and being told "not
 * applied". So the HTTP transports ask the fence again from inside undici's
 * `onConnect` hook, which runs synchronously right before undici writes the
 * request's head and body to the socket (client-h1 `writeH1`, then
 * `writeBuffer`, in the same call). A fence that says no aborts the request
 * there: nothing is written, and the fault is 'fenced'.
 *
 * What remains is one synchronous stretch of JavaScript between the check and
 * the write(2) call, a few microseconds; only a service that checks the
 * request itself closes that: a notarized one refuses an attempt the relay
 * that took over aborted (docs/notary.md, "A late request";
 * src/core/relay/README.md). The crash point `before-write` lies in that
 * stretch, so tests can stop a relay exactly there.
 */
import type { Dispatcher } from 'undici'
import { crashPointNow } from '../../crash-points.js'
import { fencedOut, type Fence } from '../fence.js'

export type { Fence }

/** What a request may carry besides its content: a caller's abort signal and a fence. */
export interface RequestGuard {
  signal?: AbortSignal
  fence?: Fence
}

/** A send's last argument: an abort signal (probes, queries) or a guard (applies). */
export function guardOf(g: AbortSignal | RequestGuard | undefined): RequestGuard {
  if (g === undefined) return {}
  return g instanceof AbortSignal ? { signal: g } : g
}

/** The dispatcher itself when there is no fence; else one that asks the fence right before writing. */
export function fenced(dispatcher: Dispatcher, fence: Fence | undefined, where: string): Dispatcher {
  if (!fence) return dispatcher
  return dispatcher.compose((dispatch) => (opts, handler) => dispatch(opts, guardHandler(handler, fence, where)))
}

type Abort = (err?: Error) => void
interface Controller {
  abort(reason: Error): void
}

function guardHandler(handler: Dispatcher.DispatchHandler, fence: Fence, where: string): Dispatcher.DispatchHandler {
  const h = handler as Dispatcher.DispatchHandler & {
    onConnect?: (abort: Abort, context?: unknown) => void
    onRequestStart?: (controller: Controller, context?: unknown) => void
  }
  // undici calls one of these two, synchronously before it writes the request.
  return new Proxy(h, {
    get(target, prop, receiver) {
      if (prop === 'onConnect' && typeof target.onConnect === 'function') {
        return (abort: Abort, context?: unknown) => (passed(fence) ? target.onConnect!(abort, context) : abort(fencedOut(where)))
      }
      if (prop === 'onRequestStart' && typeof target.onRequestStart === 'function') {
        return (controller: Controller, context?: unknown) =>
          passed(fence) ? target.onRequestStart!(controller, context) : controller.abort(fencedOut(where))
      }
      const v = Reflect.get(target, prop, receiver) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
}

/** The fence's yes, then the crash point between it and the write. */
function passed(fence: Fence): boolean {
  if (!fence()) return false
  crashPointNow('before-write')
  return true
}
