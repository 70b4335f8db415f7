/**
 * The S3 target's actions and their arguments, validated at the edge.
 *
 *   put      { key, body, encoding?: "utf8" | "base64", content_type?, metadata?: { name: value } }
 *   delete   { key }
 *   restore  { key, version_id }   (put an earlier version back: a compensation)
 *
 * Every write carries the effect id as the object's user metadata
 * `x-amz-meta-interlock-effect`, which is how query finds a put (or restore)
 * again; a caller's metadata may not set it. Arguments are journaled, so a
 * put's body is capped well below S3's own limit.
 */
import type { JsonObject } from '../../canonical-json.js'
import { InputError } from '../../errors.js'
import { assertUtf8Text } from '../utf8-text.js'
import { checkKey } from './address.js'

export const S3_ACTIONS = ['put', 'delete', 'restore'] as const
export type S3ActionName = (typeof S3_ACTIONS)[number]

export const EFFECT_METADATA = 'interlock-effect'
/** Largest put body, decoded: the journal keeps it. */
export const PUT_BODY_LIMIT = 5 * 1024 * 1024

export type S3Action =
  | { action: 'put'; key: string; body: Buffer; contentType?: string; metadata: Record<string, string> }
  | { action: 'delete'; key: string }
  | { action: 'restore'; key: string; versionId: string }

const ALLOWED: Record<S3ActionName, readonly string[]> = {
  put: ['key', 'body', 'encoding', 'content_type', 'metadata'],
  delete: ['key'],
  restore: ['key', 'version_id'],
}

const HEADER_VALUE = /^[\x20-\x7e]*$/
const META_NAME = /^[a-z0-9][a-z0-9_-]{0,127}$/
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
// S3 keeps at most 2 KB of user metadata, names and values together.
const METADATA_LIMIT = 2048 - EFFECT_METADATA.length - 64

export function parseS3Action(action: string, args: JsonObject): S3Action {
  if (!(S3_ACTIONS as readonly string[]).includes(action)) {
    throw new InputError(`the s3 target has no action ${JSON.stringify(action)}; it knows ${S3_ACTIONS.join(', ')}`)
  }
  const name = action as S3ActionName
  const unknown = Object.keys(args).filter((k) => !ALLOWED[name].includes(k))
  if (unknown.length > 0) throw new InputError(`${name}: unknown argument(s) ${unknown.join(', ')}; expected ${ALLOWED[name].join(', ')}`)
  const key = checkKey(name, args.key)
  if (name === 'delete') return { action: name, key }
  if (name === 'restore') {
    const v = args.version_id
    if (typeof v !== 'string' || v === '' || v.length > 1024 || !HEADER_VALUE.test(v)) throw new InputError(`restore: version_id must be an S3 version id`)
    return { action: name, key, versionId: v }
  }
  return { action: name, key, body: body(args), contentType: contentType(args.content_type), metadata: metadata(args.metadata) }
}

function body(args: JsonObject): Buffer {
  const encoding = args.encoding ?? 'utf8'
  if (encoding !== 'utf8' && encoding !== 'base64') throw new InputError(`put: encoding must be "utf8" or "base64"`)
  if (typeof args.body !== 'string') throw new InputError(`put: body must be a string (text, or base64 with encoding = "base64")`)
  if (encoding === 'base64' && !BASE64.test(args.body)) throw new InputError(`put: body is not valid base64`)
  // The object holds the body's UTF-8 bytes, the same on every path: text without any is refused, not altered.
  if (encoding === 'utf8') assertUtf8Text(args.body, 'put: body', 'Send bytes that are not UTF-8 text with encoding = "base64".')
  const bytes = Buffer.from(args.body, encoding)
  if (bytes.length > PUT_BODY_LIMIT) throw new InputError(`put: body is ${bytes.length} bytes; at most ${PUT_BODY_LIMIT} go through Interlock`)
  return bytes
}

function contentType(v: unknown): string | undefined {
  if (v === undefined) return undefined
  if (typeof v !== 'string' || v === '' || v.length > 256 || !HEADER_VALUE.test(v)) throw new InputError(`put: content_type must be a MIME type such as "text/plain"`)
  return v
}

function metadata(v: unknown): Record<string, string> {
  if (v === undefined) return {}
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new InputError(`put: metadata must be a table of names to text values`)
  const out: Record<string, string> = {}
  let size = 0
  for (const [k, value] of Object.entries(v)) {
    if (!META_NAME.test(k)) throw new InputError(`put: metadata name ${JSON.stringify(k)} must be lower-case letters, digits, "-" and "_"`)
    if (k === EFFECT_METADATA) throw new InputError(`put: metadata may not set "${EFFECT_METADATA}"; Interlock sets it`)
    if (typeof value !== 'string' || !HEADER_VALUE.test(value)) throw new InputError(`put: metadata.${k} must be printable ASCII text`)
    size += k.length + value.length
    out[k] = value
  }
  if (size > METADATA_LIMIT) throw new InputError(`put: metadata is ${size} bytes; S3 keeps at most 2 KB with Interlock's own`)
  return out
}
