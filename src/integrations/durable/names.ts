/**
 * Keys made from an engine's own ids (a Temporal run id and activity id, a
 * step's name and ordinal), stable across the engine's retries of one step
 * and distinct between steps. (Threads are `<engine>:<id>`: ../thread-name.ts.)
 *
 * An engine's id may make a key longer than a key may be (200): such a one is
 * named by its SHA-256 instead, which keeps it stable and distinct, though no
 * longer readable in `outbox list`.
 */
import { sha256Hex } from '../../core/hash.js'

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
