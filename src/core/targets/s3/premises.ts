/**
 * S3 premises: the object at the effect's key as the agent saw it, read with
 * HeadObject, flat in the effect's premises:
 *
 *   { exists: false }                                   no object there
 *   { exists: true, etag, version_id?, previous? }      this object
 *
 * They are pushed down to S3 on the write itself (If-None-Match: * for
 * `exists: false`, If-Match: <etag> otherwise: conditional writes), so the
 * check and the write are one step; validatePremises checks them once more
 * before dispatch. With no `exists` the write is unconditional.
 *
 * `previous` keeps a small unversioned object's bytes (base64), content type
 * and metadata, so the effect's compensation can put it back; a versioned
 * object is put back from its version_id instead. These bytes are journaled
 * with the premises: a bucket holding secrets wants versioning.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Premises } from '../../effect.js'
import { TargetError } from '../../errors.js'
import { EFFECT_METADATA } from './actions.js'
import type { S3Client } from './client.js'
import { s3Error } from './faults.js'
import type { HttpResponse } from './transport.js'

/** Largest unversioned object whose bytes capture keeps for a later restore. */
export const KEEP_PREVIOUS_LIMIT = 64 * 1024

export type ObjectState =
  | { exists: false }
  | { exists: true; etag: string; versionId?: string; size: number; contentType?: string; metadata: Record<string, string> }

export function objectState(res: HttpResponse): ObjectState {
  const metadata: Record<string, string> = {}
  for (const [k, v] of Object.entries(res.headers)) if (k.startsWith('x-amz-meta-')) metadata[k.slice('x-amz-meta-'.length)] = v
  const h = res.headers
  const state: ObjectState = { exists: true, etag: h.etag ?? '', size: Number(h['content-length'] ?? 0), metadata }
  if (h['x-amz-version-id'] && h['x-amz-version-id'] !== 'null') state.versionId = h['x-amz-version-id']
  if (h['content-type']) state.contentType = h['content-type']
  return state
}

export async function headObject(client: S3Client, key: string): Promise<ObjectState> {
  const res = await client.head(key)
  if (res.status === 404) return { exists: false }
  if (res.status < 200 || res.status >= 300) {
    throw new TargetError(`${client.where('HEAD')} answered ${res.status} (${s3Error(res).code}) for ${describe(client, key)}; it cannot be read now`, {
      context: { status: res.status },
    })
  }
  return objectState(res)
}

export async function captureObject(client: S3Client, key: string): Promise<Premises> {
  const s = await headObject(client, key)
  if (!s.exists) return { exists: false }
  const p: Premises = { exists: true, etag: s.etag }
  if (s.versionId) p.version_id = s.versionId
  else if (s.size <= KEEP_PREVIOUS_LIMIT) {
    const res = await client.get(key, { ifMatch: s.etag, limit: KEEP_PREVIOUS_LIMIT + 1 })
    if (res.status !== 200 || res.truncated) {
      throw new TargetError(`${describe(client, key)} changed while it was being read (${res.status}); capture again`)
    }
    const got = objectState(res)
    const previous: JsonObject = { body_base64: res.bytes.toString('base64'), metadata: userMetadata(got) }
    if (got.exists && got.contentType) previous.content_type = got.contentType
    p.previous = previous
  }
  return p
}

export async function validateObject(client: S3Client, key: string, p: Premises): Promise<string[]> {
  if (p.exists === undefined) return []
  if (typeof p.exists !== 'boolean') return ['premises.exists must be true or false, as capture writes it']
  if (p.exists && typeof p.etag !== 'string') return ['premises.etag is missing: capture the object first']
  const s = await headObject(client, key)
  const where = describe(client, key)
  if (!p.exists) return s.exists ? [`${where} exists now (ETag ${s.etag}); the decision expected no object there`] : []
  if (!s.exists) return [`${where} is gone since the decision`]
  if (s.etag !== p.etag) return [`${where} changed since the decision (ETag was ${p.etag}, now ${s.etag})`]
  return []
}

/** An object's user metadata without the effect id Interlock wrote there. */
export function userMetadata(s: ObjectState): Record<string, string> {
  if (!s.exists) return {}
  const { [EFFECT_METADATA]: _, ...rest } = s.metadata
  return rest
}

export function describe(client: S3Client, key: string): string {
  return `s3://${client.location.bucket}/${key}`
}
