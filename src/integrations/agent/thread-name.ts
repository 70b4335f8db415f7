/**
 * The Interlock thread of a framework's run (`<framework>/<id>`, named as
 * the engines' are: ../thread-name.ts), and the effect key of a tool call.
 */
import { createHash } from 'node:crypto'
import { threadName as spell } from '../thread-name.js'

/** `<framework>/<id>`, or `<framework>/sha256-…` for an id that does not fit a thread name (or spells a hashed one). */
export function threadName(framework: string, id: string): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError(`a ${framework} thread needs a non-empty id`)
  return spell(framework, '/', id)
}

/** An effect key from a framework's call id (a tool_call_id, a callId): the same call id, the same effect. */
export function callKey(callId: string): string {
  return callId.length <= 190 ? `call:${callId}` : `call-sha256:${createHash('sha256').update(callId).digest('hex')}`
}
