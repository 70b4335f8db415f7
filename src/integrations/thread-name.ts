/**
 * The Interlock thread (journal) of a framework's or an engine's run:
 * `<prefix><separator><id>`. Agent frameworks put `/` between prefix and id,
 * durable engines `:` (docs/design.md: an engine's thread can be read back to
 * its run, as DBOS's wake-up does).
 *
 * Thread names are restricted (core/effect.ts: 1-200 of letters, digits and
 * ._:@/_-); the run's own id (a LangGraph thread_id, a Restate invocation id,
 * a Temporal workflow id) may be any string, so one that does not fit is named
 * by its hash: the same id always gives the same thread. Which ids fit is
 * frozen per separator: journals already written are named by these rules,
 * and a changed name would orphan them.
 */
import { sha256Hex } from '../core/hash.js'

export type Separator = '/' | ':'

const HASHED = 'sha256-'
// Agent frameworks: an id of 1-160 such characters.
const FRAMEWORK_ID = /^[A-Za-z0-9._:@/_-]{1,160}$/
// Engines: the whole `<engine>:<id>` a valid thread name.
const ENGINE_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/_-]{0,199}$/

function fits(prefix: string, separator: Separator, id: string): boolean {
  // A framework's id spelling a hashed name ("sha256-…") is hashed too: it would otherwise be the thread of the id that hashes to it.
  return separator === '/' ? FRAMEWORK_ID.test(id) && !id.startsWith(HASHED) : ENGINE_NAME.test(`${prefix}:${id}`)
}

/** `<prefix><separator><id>` when the id fits, else `<prefix><separator>sha256-<first 40 hex of the id's hash>`. */
export function threadName(prefix: string, separator: Separator, id: string): string {
  return `${prefix}${separator}${fits(prefix, separator, id) ? id : `${HASHED}${sha256Hex(id).slice(0, 40)}`}`
}
