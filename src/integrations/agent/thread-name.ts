/**
 * The Interlock thread (journal) of a framework's run. Thread names are
 * restricted (core/effect.ts: 1-200 of letters, digits and ._:@/_-); a
 * framework's own id (a LangGraph thread_id, a conversation id) may be any
 * string, so one that does not fit is named by its hash: the same id always
 * gives the same thread, and two ids never share one.
 */
import { createHash } from 'node:crypto'

const FITS = /^[A-Za-z0-9._:@/_-]{1,160}$/
const HASHED = 'sha256-'

export function threadName(framework: string, id: string): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError(`a ${framework} thread needs a non-empty id`)
  // An id spelling a hashed name ("sha256-…") is hashed too: it would otherwise be the thread of the id that hashes to it.
  return FITS.test(id) && !id.startsWith(HASHED) ? `${framework}/${id}` : `${framework}/${HASHED}${createHash('sha256').update(id).digest('hex').slice(0, 40)}`
}

/** An effect key from a framework's call id (a tool_call_id, a callId): the same call id, the same effect. */
export function callKey(callId: string): string {
  return callId.length <= 190 ? `call:${callId}` : `call-sha256:${createHash('sha256').update(callId).digest('hex')}`
}
