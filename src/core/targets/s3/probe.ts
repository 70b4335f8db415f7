/**
 * `interlock check`'s read-only probe of an S3 target, signed with the
 * target's keys:
 *
 * 1. HeadBucket (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadBucket.html):
 *    200 when the bucket exists and the keys may list it (s3:ListBucket), 404
 *    when there is no such bucket, 403 when the keys are refused or may not
 *    list it, 301 or 400 when the region is wrong. A HEAD answer has no body.
 * 2. GetObject of a key that does not exist, which changes nothing: 404
 *    NoSuchKey is what recovery needs, since tier 2 tells a write that never
 *    landed by HeadObject's 404. Without s3:ListBucket, S3 answers 403
 *    AccessDenied instead ("If you don't have the s3:ListBucket permission,
 *    Amazon S3 returns an HTTP status code 403 Forbidden error",
 *    https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html), and
 *    every effect in flight after a crash would wait for an operator; that is
 *    the tier row's failure. The error code also tells refused keys
 *    (InvalidAccessKeyId, SignatureDoesNotMatch) from a missing permission.
 */
import { randomUUID } from 'node:crypto'
import type { ProbeResult } from '../target.js'
import type { S3Client } from './client.js'
import { s3Error } from './faults.js'

const KEYS_FIX = 'Check access_key_id / secret_access_key (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and the region.'
const GRANT_FIX = 'Grant the keys s3:ListBucket on the bucket, and s3:GetObject and s3:PutObject (and s3:DeleteObject, s3:ListBucketVersions on a versioned bucket) on its objects.'

export async function probeS3(client: S3Client, signal?: AbortSignal): Promise<ProbeResult> {
  const { bucket, region } = client.location
  const where = client.where('HEAD')
  const answer = await client.headBucket(signal)
  switch (answer.status) {
    case 200:
    case 403:
      return probeMissingKey(client, answer.status === 200, signal)
    case 404:
      return { ok: false, detail: `${where}: HeadBucket answered 404: there is no bucket ${bucket}`, fix: 'Create the bucket, or fix bucket (and endpoint) in the target config.' }
    case 301:
    case 400:
      return { ok: false, detail: `${where}: HeadBucket ${bucket} answered ${answer.status}: the bucket is not in region ${region}, or the request is malformed`, fix: 'Set region to the bucket\'s region (and endpoint for S3-compatible stores).' }
    default:
      return { ok: false, detail: `${where}: HeadBucket ${bucket} answered ${answer.status}`, fix: answer.status >= 500 ? 'S3 could not answer now; run the check again.' : 'Check endpoint, region and path_style.' }
  }
}

/** What S3 says about a key nobody wrote: 404 (recovery can tell), 403 AccessDenied (it cannot), or refused keys. */
async function probeMissingKey(client: S3Client, listed: boolean, signal?: AbortSignal): Promise<ProbeResult> {
  const bucket = client.location.bucket
  const key = `interlock-check/absent-${randomUUID()}`
  const res = await client.get(key, { limit: 4096, signal })
  const err = s3Error(res)
  const where = client.where('GET')
  if (res.status === 404 && err.code === 'NoSuchKey') {
    return {
      ok: true,
      detail: `HeadBucket ${bucket} answered ${listed ? 200 : 403}; a key that does not exist answers 404 NoSuchKey`,
      tier: { ok: true, detail: 'tier 2: each write carries the effect id in the object\'s metadata, and a missing object answers 404, so recovery can tell a write that never landed' },
      ...(listed ? {} : { warn: true, fix: 'HeadBucket was refused (403) although objects can be read; grant s3:ListBucket on the bucket.' }),
    }
  }
  if (res.status === 403 && err.code === 'AccessDenied') {
    return {
      ok: true,
      warn: true,
      detail: `HeadBucket ${bucket} answered ${listed ? 200 : 403}; the keys are accepted, but a key that does not exist answers 403 AccessDenied, not 404`,
      fix: GRANT_FIX,
      tier: {
        ok: false,
        detail: 'tier 2 cannot be honoured: without s3:ListBucket (or s3:GetObject), S3 answers 403 instead of 404 for an object that does not exist, so after a crash recovery cannot tell whether a write landed, and every effect in flight waits for an operator as AMBIGUOUS',
        fix: GRANT_FIX,
      },
    }
  }
  if (res.status === 403) {
    return { ok: false, credentialRefused: true, detail: `${where}: answered 403 ${err.code}: the keys were refused by bucket ${bucket}`, fix: KEYS_FIX }
  }
  return { ok: false, detail: `${where}: GetObject of a missing key in ${bucket} answered ${res.status} ${err.code}`, fix: res.status >= 500 ? 'S3 could not answer now; run the check again.' : 'Check endpoint, region and path_style.' }
}
