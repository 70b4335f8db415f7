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
  /** `deleteMarker`: the version id of the delete marker that is the key's current version (a versioned bucket). */
  | { exists: false; deleteMarker?: string }
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

/**
 * The object at `key` now. A HEAD answer has no body, so a 403 is asked again
 * with GetObject, whose error names the cause: S3 answers 403 AccessDenied
 * instead of 404 for a key that does not exist when the keys lack
 * s3:ListBucket (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html,
 * "Permissions"), and then nobody can tell a missing object from a forbidden
 * one: that is a TargetError with context.code 'AccessDenied' (isAccessDenied).
 */
export async function headObject(client: S3Client, key: string): Promise<ObjectState> {
  const res = await client.head(key)
  if (res.status === 404) return absent(res)
  if (res.status === 403) return readForbidden(client, key)
  if (res.status < 200 || res.status >= 300) throw unreadable(client, 'HEAD', key, res)
  return objectState(res)
}

/** The user metadata of one version of the object (HeadObject ?versionId=). */
export async function headVersion(client: S3Client, key: string, versionId: string): Promise<ObjectState> {
  const res = await client.head(key, { versionId })
  if (res.status === 404 || res.status === 405) return { exists: false }
  if (res.status < 200 || res.status >= 300) throw unreadable(client, 'HEAD', key, res)
  return objectState(res)
}

export function isAccessDenied(e: unknown): e is TargetError {
  return e instanceof TargetError && e.context.code === 'AccessDenied'
}

async function readForbidden(client: S3Client, key: string): Promise<ObjectState> {
  const res = await client.get(key, { limit: 4096 })
  if (res.status === 404) return absent(res)
  if (res.status >= 200 && res.status < 300) return objectState(res)
  const err = s3Error(res)
  if (res.status === 403 && err.code === 'AccessDenied') {
    throw new TargetError(
      `${client.where('HEAD')} answered 403 AccessDenied for ${describe(client, key)}: the keys may not list the bucket (s3:ListBucket), and then S3 answers 403 instead of 404 for an object that does not exist; or they may not read it (s3:GetObject). Whether the object exists cannot be read`,
      {
        context: { status: 403, code: err.code },
        hint: 'Grant the target\'s keys s3:ListBucket on the bucket and s3:GetObject on its objects; `interlock check` tests both.',
      },
    )
  }
  throw unreadable(client, 'GET', key, res)
}

function absent(res: HttpResponse): ObjectState {
  const marker = res.headers['x-amz-delete-marker'] === 'true' ? res.headers['x-amz-version-id'] : undefined
  return marker ? { exists: false, deleteMarker: marker } : { exists: false }
}

function unreadable(client: S3Client, method: string, key: string, res: HttpResponse): TargetError {
  const err = s3Error(res)
  const said = err.message ? `${err.code}: ${err.message}` : err.code
  return new TargetError(`${client.where(method)} answered ${res.status} (${said}) for ${describe(client, key)}; it cannot be read now`, {
    context: { status: res.status, code: err.code },
  })
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
