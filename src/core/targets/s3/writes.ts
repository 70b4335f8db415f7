/**
 * The S3 effects and how query finds each again (tier 2):
 *
 * - put:     PutObject with `x-amz-meta-interlock-effect: <id>` and the premise as
 *            If-None-Match: * / If-Match: <etag>; found when HeadObject shows that metadata.
 * - restore: GetObject of the version, then a put of its bytes, content type and
 *            metadata (conditioned and found like a put).
 * - delete:  DeleteObject, conditioned on the premised object with If-Match:
 *            <etag> (a conditional delete), so an object another writer put
 *            after the decision is never deleted; found when HeadObject finds
 *            no object.
 * How query answers, and when it says it cannot know: find.ts.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html (user metadata)
 */
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault } from '../../errors.js'
import { EFFECT_METADATA, PUT_BODY_LIMIT, type S3Action } from './actions.js'
import type { S3Client } from './client.js'
import { s3Fault } from './faults.js'
import { objectState, userMetadata } from './premises.js'
import type { HttpResponse } from './transport.js'
import type { RequestGuard } from '../http/fence.js'

type Put = Extract<S3Action, { action: 'put' }>
type Restore = Extract<S3Action, { action: 'restore' }>

interface Content {
  body: Buffer
  contentType?: string
  metadata: Record<string, string>
}

export async function applyPut(client: S3Client, effect: Effect, a: Put, nowMs: number, guard: RequestGuard = {}): Promise<Receipt> {
  return write(client, effect, a.key, { body: a.body, contentType: a.contentType, metadata: a.metadata }, nowMs, guard)
}

export async function applyRestore(client: S3Client, effect: Effect, a: Restore, nowMs: number, guard: RequestGuard = {}): Promise<Receipt> {
  const res = await client.get(a.key, { versionId: a.versionId, limit: PUT_BODY_LIMIT })
  if (res.status === 404) throw new DispatchFault('refused', `${client.where('GET')}: version ${a.versionId} of ${a.key} does not exist; nothing to restore`)
  const fault = s3Fault(res, client.where('GET'), nowMs)
  if (fault) throw fault
  if (res.truncated) throw new DispatchFault('refused', `${client.where('GET')}: version ${a.versionId} of ${a.key} is larger than ${PUT_BODY_LIMIT} bytes; restore it with S3's own tools`)
  const old = objectState(res)
  const receipt = await write(client, effect, a.key, { body: res.bytes, contentType: old.exists ? old.contentType : undefined, metadata: userMetadata(old) }, nowMs, guard)
  return { ...receipt, restored_version_id: a.versionId }
}

/**
 * The premise pushed down as S3 conditional delete: If-Match on the ETag the
 * decision saw, checked by S3 in the same step as the delete (412 when the
 * object changed, 404 when it is gone). Not a read, then a delete: another
 * writer's object put between the two would be deleted.
 */
export async function applyDelete(client: S3Client, effect: Effect, key: string, nowMs: number, guard: RequestGuard = {}): Promise<Receipt> {
  const p = effect.premises
  const ifMatch = p.exists === true && typeof p.etag === 'string' ? p.etag : undefined
  const res = await client.delete(key, guard, { ifMatch })
  const fault = s3Fault(res, client.where('DELETE'), nowMs, ifMatch ? 'if-match' : undefined)
  if (fault) throw fault
  return { bucket: client.location.bucket, key, deleted: true }
}

async function write(client: S3Client, effect: Effect, key: string, c: Content, nowMs: number, guard: RequestGuard = {}): Promise<Receipt> {
  const headers: Record<string, string> = {}
  if (c.contentType) headers['content-type'] = c.contentType
  for (const [k, v] of Object.entries(c.metadata)) headers[`x-amz-meta-${k}`] = v
  headers[`x-amz-meta-${EFFECT_METADATA}`] = effect.id
  const conditional = precondition(effect.premises)
  if (conditional) headers[conditional.header] = conditional.value
  const res = await client.put(key, c.body, headers, guard)
  const fault = s3Fault(res, client.where('PUT'), nowMs, conditional?.header)
  if (fault) throw fault
  return putReceipt(client, key, res)
}

/** The premise pushed down: the object must (not) be there, exactly as the decision saw it. */
function precondition(p: Premises): { header: 'if-none-match' | 'if-match'; value: string } | null {
  if (p.exists === false) return { header: 'if-none-match', value: '*' }
  if (p.exists === true && typeof p.etag === 'string') return { header: 'if-match', value: p.etag }
  return null
}

function putReceipt(client: S3Client, key: string, res: HttpResponse): Receipt {
  const etag = res.headers.etag
  if (!etag) throw new DispatchFault('unknown', `${client.where('PUT')} answered ${res.status} without an ETag`)
  const receipt: Receipt = { bucket: client.location.bucket, key, etag }
  const v = res.headers['x-amz-version-id']
  if (v && v !== 'null') receipt.version_id = v
  return receipt
}
