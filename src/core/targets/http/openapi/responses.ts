/**
 * An operation's documented responses as answer rules: the 2xx statuses it
 * documents are `committed` (any other 2xx is then an unknown outcome: the
 * service answered what it was not said to answer on success), and a
 * receipt pointer to the created object's id when every success answer's
 * schema requires an id-like property. A property the schema lists but does
 * not require is not used: an answer without it would be an unknown outcome.
 * Other statuses keep the http target's built-in reading (4xx refused, 429
 * "not now", 5xx unknown), which is what they mean in most documents.
 */
import type { StatusSpec } from '../../../config/types-http.js'
import type { JsonTable } from './document.js'
import { derefTable, isTable, objectShape } from './refs.js'

/** In this order: the first that every success answer requires wins. */
const ID_LIKE = ['id', 'sid', 'uuid', 'guid', 'key', 'sha'] as const

export interface AnswerRules {
  committed?: StatusSpec[]
  receipt?: string
  about: string[]
  notes: string[]
}

export function mapResponses(root: JsonTable, operation: JsonTable): AnswerRules {
  const out: AnswerRules = { about: [], notes: [] }
  const responses = isTable(operation.responses) ? operation.responses : {}
  const success = Object.keys(responses).filter((k) => /^2(\d\d|XX)$/i.test(k))
  if (success.length === 0) {
    out.notes.push('The document lists no 2xx answer for this operation: any 2xx is taken as done.')
    return out
  }
  out.committed = success.map((k) => (/^\d+$/.test(k) ? Number(k) : '2xx'))
  // Bodies of the success answers; one without a JSON body cannot carry a receipt.
  const shapes = success.map((k) => {
    const r = derefTable(root, responses[k], out.notes)
    const content = r && isTable(r.content) ? r.content : {}
    const type = Object.keys(content).find((t) => /^application\/([^;\s]+\+)?json\s*(;|$)/i.test(t))
    return type && isTable(content[type]) ? objectShape(root, content[type].schema) : undefined
  })
  const id = shapes.every((s) => s?.kind === 'object') ? ID_LIKE.find((name) => shapes.every((s) => s!.required.has(name))) : undefined
  const listed = ID_LIKE.find((name) => shapes.some((s) => s?.properties.some(([p]) => p === name)))
  if (id) {
    out.receipt = `/${id}`
    out.about.push(`Answers: ${said(success)} done (committed); the receipt keeps /${id}, which the document says every such answer has.`)
  } else {
    out.about.push(`Answers: ${said(success)} done (committed).`)
    if (listed) out.notes.push(`No receipt pointer: the success answer lists ${listed} but the document does not say every answer has it; add receipt = "/${listed}" if the service always returns it.`)
    else out.notes.push('No receipt pointer: the success answer has no id-like property (id, sid, uuid, key, sha); the receipt keeps the whole answer.')
  }
  return out
}

function said(statuses: string[]): string {
  return `${statuses.join(', ')} ${statuses.length === 1 ? 'means' : 'mean'}`
}
