/**
 * Tier 2's question for S3, "did this effect already happen?", answered so
 * that a write is never applied twice:
 *
 * 1. HeadObject. The object carries the effect id in its metadata: found.
 *    A delete finds no object: found.
 * 2. The object is still exactly as the decision saw it (the premises: absent,
 *    or this ETag and version): nothing was written, so "not found"; the
 *    re-apply carries the same pushed-down condition as the first try.
 * 3. Anything else means someone else wrote after the decision, before or
 *    after our write; sending again could apply ours a second time over theirs.
 *    - A versioned bucket keeps every write: the key's history is read
 *      (ListObjectVersions, then HeadObject of each version newer than the one
 *      the decision saw, for the effect id; for a delete, a delete marker
 *      right after that version). Found, or definitely not found.
 *    - An unversioned bucket keeps only the newest object: the answer is that
 *      it cannot be known, a DispatchFault 'unknowable', which makes the effect
 *      AMBIGUOUS for an operator instead of sending it again.
 * Also 'unknowable': HeadObject's 403 without s3:ListBucket (premises.ts) and
 * a history the keys may not list (s3:ListBucketVersions), each naming the
 * permission to grant.
 *
 * One thing no store of S3's can show: an unversioned object put back to the
 * exact bytes the decision saw (same ETag) after our write looks unwritten.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html
 */
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault } from '../../errors.js'
import { EFFECT_METADATA, type S3Action } from './actions.js'
import type { S3Client } from './client.js'
import { describe, headObject, headVersion, isAccessDenied, type ObjectState } from './premises.js'
import { keyHistory, type HistoryEntry } from './versions.js'

/** Versions read one by one at most, newest first, when looking for the effect id. */
export const MAX_VERSIONS_READ = 50

type Present = Extract<ObjectState, { exists: true }>

/** The receipt of an effect that already happened, or null when it definitely did not. */
export async function findEffect(client: S3Client, effect: Effect, a: S3Action): Promise<Receipt | null> {
  const now = await asking(client, a.key, () => headObject(client, a.key))
  return a.action === 'delete' ? findDelete(client, effect.premises, a.key, now) : findWrite(client, effect, a, now)
}

async function findWrite(client: S3Client, effect: Effect, a: Exclude<S3Action, { action: 'delete' }>, now: ObjectState): Promise<Receipt | null> {
  const receipt = (s: { etag: string; versionId?: string }, extra: Receipt = {}): Receipt => {
    const r: Receipt = { bucket: client.location.bucket, key: a.key, etag: s.etag }
    if (s.versionId) r.version_id = s.versionId
    if (a.action === 'restore') r.restored_version_id = a.versionId
    return { ...r, ...extra }
  }
  if (now.exists && now.metadata[EFFECT_METADATA] === effect.id) return receipt(now)
  const p = effect.premises
  if (asDecided(p, now)) return null
  const where = describe(client, a.key)
  if (!versioned(p, now)) {
    throw unknowable(
      `${where} ${now.exists ? `holds an object another writer wrote (ETag ${now.etag})` : 'is gone'}, and it is not what the decision saw; the bucket is not versioned, so whether this write landed before it cannot be known, and sending it again could apply it twice`,
      'Look at the object; resolve the effect as committed if this write landed, or failed if not. Turn on versioning for the bucket to let recovery tell.',
    )
  }
  const history = await asking(client, a.key, () => keyHistory(client, a.key))
  const newer = since(history, p, where)
  let read = 0
  for (const v of newer) {
    if (v.deleteMarker) continue
    if (++read > MAX_VERSIONS_READ) {
      throw unknowable(`${where} has more than ${MAX_VERSIONS_READ} versions newer than the one the decision saw; the effect id was not among the newest ${MAX_VERSIONS_READ}`, 'Search the key\'s versions for the interlock-effect metadata, then resolve the effect.')
    }
    const s = await asking(client, a.key, () => headVersion(client, a.key, v.versionId))
    if (s.exists && s.metadata[EFFECT_METADATA] === effect.id) return receipt({ etag: s.etag, versionId: v.versionId }, { superseded: true })
  }
  return null
}

async function findDelete(client: S3Client, p: Premises, key: string, now: ObjectState): Promise<Receipt | null> {
  if (!now.exists) return { bucket: client.location.bucket, key, deleted: true }
  const conditional = p.exists === true && typeof p.etag === 'string'
  // Still the object the decision saw: the conditional delete did not happen.
  if (conditional && asDecided(p, now)) return null
  const where = describe(client, key)
  if (!versioned(p, now)) {
    throw unknowable(
      `${where} holds an object (ETag ${now.etag}) ${conditional ? 'other than the one the decision saw' : 'and the delete carried no premises to compare it with'}; the bucket is not versioned, so whether the delete happened before it was written cannot be known, and deleting again could delete another writer's object`,
      'Look at the object; resolve the effect as committed if the delete happened, or failed if not.',
    )
  }
  const history = await asking(client, key, () => keyHistory(client, key))
  if (conditional && typeof p.version_id === 'string') {
    const newer = since(history, p, where)
    // A conditional delete can only have landed on the version the decision saw: its marker comes right after it.
    const next = newer.at(-1)
    if (next?.deleteMarker) return { bucket: client.location.bucket, key, deleted: true, version_id: next.versionId, superseded: true }
    return null
  }
  if (!history.some((e) => e.deleteMarker)) return null
  throw unknowable(
    `${where} was deleted and written again since; the delete carried no version to compare with, so whether the delete marker is this effect's cannot be known`,
    'Look at the key\'s versions; resolve the effect as committed if the delete happened, or failed if not.',
  )
}

/** The object is exactly as the premises describe it: nothing was written since the decision. */
function asDecided(p: Premises, now: ObjectState): boolean {
  if (p.exists === true) {
    return now.exists && now.etag === p.etag && (typeof p.version_id !== 'string' || now.versionId === p.version_id)
  }
  // exists: false, or no premises at all: nothing there, and no delete marker to say something was.
  return !now.exists && now.deleteMarker === undefined
}

function versioned(p: Premises, now: ObjectState): boolean {
  return typeof p.version_id === 'string' || (now.exists ? (now as Present).versionId !== undefined : now.deleteMarker !== undefined)
}

/** The history newer than the version the decision saw (all of it when it saw none), newest first. */
function since(history: HistoryEntry[], p: Premises, where: string): HistoryEntry[] {
  if (typeof p.version_id !== 'string') return history
  const at = history.findIndex((e) => e.versionId === p.version_id)
  if (at < 0) {
    throw unknowable(`${where}: the version the decision saw (${p.version_id}) is no longer in the key's history, so what came after it cannot be read`, 'Look at the key\'s versions; resolve the effect as committed or failed.')
  }
  return history.slice(0, at)
}

/** Runs a read; a 403 AccessDenied (a permission the keys lack) becomes 'unknowable', naming the permission. */
async function asking<T>(client: S3Client, key: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (e) {
    if (isAccessDenied(e)) throw unknowable(e.message, `${e.hint ?? 'Grant the permission.'} Then resolve the effect (${describe(client, key)}) as committed or failed.`)
    throw e
  }
}

/** The hint goes into the message too: the message is what the AMBIGUOUS record keeps for the operator. */
function unknowable(message: string, hint: string): DispatchFault {
  return new DispatchFault('unknowable', `${message}. ${hint}`, { hint })
}
