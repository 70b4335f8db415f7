/**
 * A relay's fence, as a target sees it: ApplyContext.fence says whether this
 * process still holds the effect (its lease is live). A target asks it
 * synchronously right before the write that could change the service, so
 * that a relay paused past its lease (SIGSTOP, a VM pause) and resumed does
 * not send what the relay that took the effect over has already sent. The
 * HTTP transports ask from inside undici (http/fence.ts); the repo target
 * before `git commit`; the PostgreSQL row target before COMMIT.
 */
import { DispatchFault } from '../errors.js'

/** true while this process may still send the effect. */
export type Fence = () => boolean

export function fencedOut(where: string): DispatchFault {
  return new DispatchFault('fenced', `${where}: not sent: this process no longer holds the effect (its lease ran out); the holder now finishes it`)
}

/** Throws the 'fenced' fault when the fence says no; nothing to do without a fence. */
export function passFence(fence: Fence | undefined, where: string): void {
  if (fence && !fence()) throw fencedOut(where)
}
