/**
 * Key names made from an engine's own ids (a Restate step's name and
 * ordinal, a Temporal run id and activity id), stable across the engine's
 * retries of one step and distinct between steps. Threads are named as
 * every integration names them (agent/thread-name.ts: `<engine>/<id>`, or
 * the id's hash when it does not fit).
 *
 * A key longer than an effect's key may be (200) is named by its SHA-256
 * instead, which keeps it stable and distinct, though no longer readable.
 */
import { sha256Hex } from '../../core/hash.js'

export { threadName } from '../agent/thread-name.js'

const KEY_MAX = 200

/** The key as given when it fits, else `sha256-<its hash>`. */
export function keyName(key: string): string {
  return key.length > 0 && key.length <= KEY_MAX ? key : `sha256-${sha256Hex(key)}`
}

/**
 * The ordinal of a step name within one run of an engine's handler, counted
 * per run object (a Restate context, a Temporal activity context): the n-th
 * call with a name is the same effect on every retry, as the engine replays
 * the handler's calls in the same order.
 */
export class Ordinals<Run extends object> {
  private readonly seen = new WeakMap<Run, Map<string, number>>()

  next(run: Run, name: string): number {
    let names = this.seen.get(run)
    if (!names) this.seen.set(run, (names = new Map()))
    const n = (names.get(name) ?? 0) + 1
    names.set(name, n)
    return n
  }
}
