/**
 * One OpenAPI operation as one action of an http target: its
 * [targets.<name>.actions.<action>] table (the keys interlock.toml takes,
 * schema-http.ts), the tier the document lets us infer, and what a person
 * must read: where it came from, why that tier, what was not sent and why.
 *
 * The tier: 1 when the document declares an idempotency header on the
 * operation (the effect id goes there), else 3, with the question that
 * would make it 2 (which read could find what the call made) left to a
 * person: no document says which of its reads can tell one call's result
 * from another's.
 */
import type { Tier } from '../../../effect.js'
import type { OpenApiDocument } from './document.js'
import { ArgNames } from './names.js'
import { isRead, operationName, operationsOf, type Operation } from './operations.js'
import { NotSent, type OptionalChoice } from './optional.js'
import { escapeRegExp, mapParameters } from './parameters.js'
import { isTable } from './refs.js'
import { mapRequestBody } from './request-body.js'
import { mapResponses } from './responses.js'
import { credentialsFor, type AuthChoice } from './security.js'

export interface ActionDraft {
  /** The operationId, or "METHOD /path". */
  operation: string
  action: string
  method: string
  path: string
  tier: Tier
  /** [targets.<n>.actions.<a>] as interlock.toml spells it, without `tier` (written only where it differs from the target's). */
  table: Record<string, unknown>
  /** Credential headers (the target's, when every action has the same). */
  credentials: Record<string, string>
  credentialsAbout: string[]
  /** Where it came from and what its keys mean. */
  about: string[]
  /** What was left out, and what to check by hand. */
  notes: string[]
}

export interface MapContext {
  target: string
  /** Prefix of environment variables (GITHUB). */
  prefix: string
  /** The server URL the action's URL starts with. */
  base: string
  auth: AuthChoice
  optional: OptionalChoice
}

export function mapOperation(doc: OpenApiDocument, op: Operation, action: string, ctx: MapContext): ActionDraft {
  const name = operationName(op)
  const args = new ArgNames()
  const notSent = new NotSent()
  const params = mapParameters(doc.root, op.pathItem, op.operation, op.path, args, ctx.optional, notSent, ctx.prefix)
  const body = mapRequestBody(doc.root, op.operation, name, args, ctx.optional, notSent)
  const answers = mapResponses(doc.root, op.operation)
  const creds = credentialsFor(doc.root, op.operation, ctx.prefix, ctx.auth)
  const tier: Tier = params.effectIdHeader ? 1 : 3

  const table: Record<string, unknown> = { method: op.method, url: `${ctx.base}${params.path}`, args: args.list() }
  if (Object.keys(params.params).length > 0) table.params = params.params
  const headers = { ...params.headers, ...(body.contentType ? { 'Content-Type': body.contentType } : {}) }
  if (Object.keys(headers).length > 0) table.headers = headers
  if (params.effectIdHeader) table.effect_id_header = params.effectIdHeader
  if (answers.committed) table.committed = answers.committed
  if (answers.receipt) table.receipt = answers.receipt
  const b = body.body
  if (b.kind === 'form') table.form = b.fields
  // JSON text: an empty table would print as a bare [..body] header, and a whole-body placeholder must be a JSON string.
  else if (b.kind === 'whole') table.body = JSON.stringify(`{args.${b.arg}}`)
  else table.body = Object.keys(b.template).length === 0 ? '{}' : b.template

  const summary = op.summary && !/[.!?]$/.test(op.summary) ? `${op.summary}.` : op.summary
  const about = [`${name}: ${op.method} ${op.path}${summary ? `. ${summary}` : ''}`]
  const docs = isTable(op.operation.externalDocs) && typeof op.operation.externalDocs.url === 'string' ? op.operation.externalDocs.url : undefined
  if (docs) about.push(docs)
  if (op.operation.deprecated === true) about.push('The document marks this operation deprecated.')
  const notes: string[] = []
  if (tier === 1) {
    about.push(`Tier 1: ${params.idempotency}`)
    notes.push('To check by hand: how long the service keeps a key (a retry after it forgot one makes the effect twice), and that it answers a repeated key with the first answer.')
  } else {
    about.push(
      `Tier 3: ${params.idempotency ?? 'the document declares no idempotency header for this operation.'} An answer lost in flight (a timeout, a reset, a 5xx) leaves the effect AMBIGUOUS for an operator; it is never sent twice.`,
    )
    notes.push(tier2Hint(doc, op, ctx.target, action))
  }
  about.push(...answers.about)
  notes.push(...params.notes, ...body.notes, ...answers.notes, ...creds.notes)
  if (args.renamed.length > 0) notes.push(`Renamed to fit interlock.toml's argument names: ${args.renamed.join('; ')}.`)
  if (!notSent.empty) {
    notes.push(`Not sent, optional in the document (rerun with --include NAME, or --include all, to send one; every call must then pass it): ${notSent.lines().join('; ')}.`)
  }
  return { operation: name, action, method: op.method, path: op.path, tier, table, credentials: creds.headers, credentialsAbout: creds.about, about, notes }
}

/** What would make the action tier 2, and the document's reads that might serve. */
function tier2Hint(doc: OpenApiDocument, op: Operation, target: string, action: string): string {
  const reads = readsNear(doc, op).map((r) => `GET ${r.path}${r.operationId ? ` (${r.operationId})` : ''}`)
  return [
    'To check by hand: does the service deduplicate on a header the document does not list? Then set tier = 1 and effect_id_header = "<its name>".',
    'Can a read find what this call made? Then carry {effect_id} in something the call sends and the read can filter on (a label, a field, a note),',
    `set tier = 2 and declare [targets.${target}.actions.${action}.query] with url, params, found (a JSON pointer) and found_equals (docs/targets.md, "Tier 2: the query").`,
    reads.length > 0 ? `Reads near this path in the document: ${reads.join(', ')}.` : 'The document has no read on this path or its parent.',
  ].join(' ')
}

/** GETs on the same path, its parent (the collection), or one of its items. */
function readsNear(doc: OpenApiDocument, op: Operation): Operation[] {
  const parent = op.path.replace(/\/[^/]+\/?$/, '')
  const item = new RegExp(`^${escapeRegExp(op.path.replace(/\/$/, ''))}/\\{[^/{}]+\\}$`)
  return operationsOf(doc)
    .filter((o) => isRead(o.method) && o.method === 'GET' && (o.path === op.path || (parent !== '' && o.path === parent) || item.test(o.path)))
    .slice(0, 3)
}
