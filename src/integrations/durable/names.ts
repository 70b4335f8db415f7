/**
 * Thread and key names made from an engine's own ids (a Restate invocation
 * id, a Temporal workflow id, run id and activity id), stable across the
 * engine's retries of one step and distinct between steps. Threads are
 * `<engine>:<id>`, as DBOS steps' are (`dbos:<workflow ID>`).
 *
 * An engine's id may hold characters an effect's thread may not (effect.ts:
 * letters, digits and ._:@/_-, at most 200), or make a key longer than a key
 * may be (200): such a one is named by its SHA-256 instead, which keeps it
 * stable and distinct, though no longer readable in `outbox list`.
 */
import { sha256Hex } from '../../core/hash.js'

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/_-]{0,199}$/
const KEY_MAX = 200

/** `<engine>:<id>` when that is a valid thread name, else `<engine>:sha256-<first 40 hex of the id's hash>`. */
export function threadName(engine: string, id: string): string {
  const plain = `${engine}:${id}`
  return NAME.test(plain) ? plain : `${engine}:sha256-${sha256Hex(id).slice(0, 40)}`
}

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
